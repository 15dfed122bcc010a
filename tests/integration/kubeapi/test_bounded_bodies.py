"""The lab API server refuses hostile request bodies quickly and keeps answering.

kube-apiserver: bodies past MaxRequestBodyBytes (3 MiB, k8s.io/apiserver/pkg/server/config.go) get 413
RequestEntityTooLarge; YAML apply-patch bodies decode through sigs.k8s.io/yaml (gopkg.in/yaml.v3's alias
limit). The lab decodes with console/bounded.py: the billion-laughs body and a 10,000-deep JSON body
are 400s, not a stalled event loop or a RecursionError.
"""

from __future__ import annotations

import time
from typing import Any

from labtools import kube_raw

KubeLab = Any
PATH = "/apis/nfd.k8s-sigs.io/v1alpha1/nodefeaturerules"
BOMB = (b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
        + b"".join(f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n".encode() for p, c in zip("abcdefgh", "bcdefghi",
                                                                                         strict=True))
        + b"kind: NodeFeatureRule\nmetadata: {name: bomb, annotations: {x: *i}}\n")




def test_hostile_bodies_are_refused_and_the_server_answers(kube_lab: KubeLab) -> None:
    t0 = time.monotonic()
    code, body = kube_raw(kube_lab, "POST", PATH, b"{" + b" " * (4 * 1024 * 1024) + b"}", "application/json")
    assert (code, body["reason"]) == (413, "RequestEntityTooLarge")
    assert body["message"] == "Request entity too large: limit is 3145728"

    code, body = kube_raw(kube_lab, "PATCH", PATH + "/bomb?fieldManager=t", BOMB, "application/apply-patch+yaml")
    assert code == 400 and "document contains excessive aliasing" in body["message"], body

    deep = b'{"kind": "NodeFeatureRule", "metadata": {"name": "deep"}, "x": ' + b"[" * 10000 + b"]" * 10000 + b"}"
    code, body = kube_raw(kube_lab, "POST", PATH, deep, "application/json")
    assert code == 400 and "nesting deeper than 100 levels" in body["message"], body

    code, body = kube_raw(kube_lab, "GET", "/api/v1/nodes")
    assert code == 200 and body["items"]
    assert time.monotonic() - t0 < 30  # generous: each is refused before any object is built
