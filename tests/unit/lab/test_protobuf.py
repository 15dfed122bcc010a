"""The lab's decoding of client-go's protobuf bodies (k8s\\0 + runtime.Unknown; field numbers of
k8s.io/api core/v1 generated.proto), checked on a Pod encoded here field by field."""

from __future__ import annotations

import pytest

from console.lab.kubeapi.protobuf import decode
from console.lab.kubeapi.status import ApiError


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def ld(num: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(num << 3 | 2) + _varint(len(data)) + data


def vi(num: int, value: int) -> bytes:
    return _varint(num << 3) + _varint(value)


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return b"k8s\x00" + ld(1, ld(1, api_version) + ld(2, kind)) + ld(2, raw)


def test_pod_as_kubectl_debug_sends_it():
    meta = ld(1, "dbg") + ld(2, "") + ld(3, "") + ld(11, ld(1, "app") + ld(2, "x")) + ld(8, b"")
    container = (ld(1, "debugger") + ld(2, "busybox:1.37.0") + ld(3, "chroot") + ld(3, "/host")
                 + ld(9, ld(1, "host-root") + ld(3, "/host")) + ld(15, vi(2, 1))
                 + ld(8, ld(1, ld(1, "cpu") + ld(2, ld(1, "100m")))))
    volume = ld(1, "host-root") + ld(2, ld(1, ld(1, "/")))  # volumeSource (inline) . hostPath . path
    spec = (ld(1, volume) + ld(2, container) + ld(3, "Never") + ld(10, "kube-worker02") + vi(12, 1)
            + ld(22, ld(2, "Exists")) + vi(25, -5))
    pod = decode(envelope("v1", "Pod", ld(1, meta) + ld(2, spec)))
    assert pod["apiVersion"] == "v1" and pod["kind"] == "Pod"
    assert pod["metadata"] == {"name": "dbg", "labels": {"app": "x"}}  # empty strings and zero Time dropped
    s = pod["spec"]
    assert s["volumes"] == [{"name": "host-root", "hostPath": {"path": "/"}}]
    c = s["containers"][0]
    assert c["command"] == ["chroot", "/host"] and c["securityContext"] == {"privileged": True}
    assert c["volumeMounts"] == [{"name": "host-root", "mountPath": "/host"}]
    assert c["resources"] == {"limits": {"cpu": "100m"}}
    assert (s["restartPolicy"], s["nodeName"], s["hostPID"], s["priority"]) == ("Never", "kube-worker02", True, -5)
    assert s["tolerations"] == [{"operator": "Exists"}]


def test_not_protobuf_or_unknown_kind():
    with pytest.raises(ApiError) as e:
        decode(b'{"kind": "Pod"}')
    assert e.value.code == 400
    with pytest.raises(ApiError) as e:
        decode(envelope("example.com/v1", "Widget", b""))
    assert e.value.code == 415


def test_a_garbled_body_is_a_400():
    spec = ld(2, ld(15, vi(1, 1)))  # securityContext.capabilities (a message) sent as a varint
    with pytest.raises(ApiError) as e:
        decode(envelope("v1", "Pod", ld(2, spec)))
    assert e.value.code == 400 and "couldn't decode the protobuf body" in e.value.message
