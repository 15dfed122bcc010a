"""Protobuf request bodies as kubectl's typed clients send them (k8s.io/apimachinery runtime/serializer/protobuf:
`k8s\\x00` + runtime.Unknown; field numbers from k8s.io/api apps/v1 and core/v1 generated.proto)."""

from __future__ import annotations

import pytest

from console.lab.kubeapi.protobuf import decode
from console.lab.kubeapi.status import ApiError


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def f(num: int, value: int | bytes | str) -> bytes:
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(num << 3 | 2) + varint(len(data)) + data


def entry(num: int, key: str, value: bytes | str) -> bytes:
    return f(num, f(1, key) + f(2, value))


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return b"k8s\x00" + f(1, f(1, api_version) + f(2, kind)) + f(2, raw)


def deployment() -> bytes:
    """What `kubectl create deployment web --image=nginx --replicas=2` writes (zero values included, as gogo does)."""
    meta = f(1, "web") + f(2, "") + f(3, "") + f(7, 0) + f(8, b"") + entry(11, "app", "web")
    container = f(1, "nginx") + f(2, "nginx") + f(5, "") + f(8, b"") + f(16, 0)
    pod_spec = f(2, container) + f(3, "") + f(10, "") + f(11, 0)
    template = f(1, entry(11, "app", "web")) + f(2, pod_spec)
    spec = f(1, 2) + f(2, entry(1, "app", "web")) + f(3, template) + f(4, b"") + f(5, 0)
    return envelope("apps/v1", "Deployment", f(1, meta) + f(2, spec) + f(3, f(1, 0) + f(2, 0)))


def test_deployment_decodes_to_its_json_shape():
    obj = decode(deployment())
    assert obj == {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "generation": 0, "labels": {"app": "web"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}},
                 "strategy": {}, "minReadySeconds": 0},
        "status": {"observedGeneration": 0, "replicas": 0},
    }


def test_pod_fields_of_a_node_debug_pod():
    vol = f(1, "host-root") + f(2, f(1, f(1, "/")))  # volumeSource is inlined in JSON
    tol = f(2, "Exists")
    spec = f(1, vol) + f(10, "kube-worker02") + f(12, 1) + f(22, tol) + f(4, 30)
    obj = decode(envelope("v1", "Pod", f(1, f(1, "dbg")) + f(2, spec)))
    assert obj["spec"] == {"volumes": [{"name": "host-root", "hostPath": {"path": "/"}}], "nodeName": "kube-worker02",
                           "hostPID": True, "tolerations": [{"operator": "Exists"}],
                           "terminationGracePeriodSeconds": 30}


def test_negative_int64():
    obj = decode(envelope("v1", "Pod", f(2, f(4, -1))))
    assert obj["spec"]["terminationGracePeriodSeconds"] == -1


@pytest.mark.parametrize(("body", "code"), [
    (envelope("v1", "Pod", f(2, f(99, "x"))), 415),  # a field the lab does not know
    (envelope("batch/v1", "Job", b""), 415),
    (b"{}", 400),
])
def test_what_is_not_modelled_is_refused(body, code):
    with pytest.raises(ApiError) as e:
        decode(body)
    assert e.value.code == code
