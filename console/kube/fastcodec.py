"""Fast codecs: list pages and watch lines decoded by msgspec straight into NodeInfo / PodInfo.

The structs below name only the fields NodeInfo.from_api / PodInfo.from_api read; msgspec skips the
rest of each object while parsing (jcristharif.com/msgspec/structs.html, "unknown fields are ignored"),
so a 150,000-pod list never becomes dicts. The result equals `JsonCodec(NodeInfo.from_api)` /
`JsonCodec(PodInfo.from_api)` on the same bytes (tests/unit/kube/test_fastcodec.py). A response that
does not have the shape of a list or a watch event raises `MalformedResponse` naming where it broke.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType, field

from console.kube.codec import Event, Key, Page
from console.kube.model import ROLE_PREFIX, NodeInfo, PodInfo, Quantity, Resources, pod_requests

T = TypeVar("T")


class MalformedResponse(ValueError):
    """The API server's bytes are not a list page / watch event of the expected kind."""


# gc=False: decoded JSON never holds reference cycles, and these structs live only while a page is projected
class _Quantities(Struct, gc=False):
    cpu: Quantity = None
    memory: Quantity = None
    pods: Quantity = None


class _Requirements(Struct, gc=False):
    requests: _Quantities | None = None


class _Container(Struct, rename="camel", gc=False):
    resources: _Requirements | None = None
    restart_policy: str | None = None


class _PodMeta(Struct, rename="camel", gc=False):
    name: str
    namespace: str | None = None
    resource_version: str = ""  # for watch events (PodInfo has no use for it)


class _PodSpec(Struct, rename="camel", gc=False):
    node_name: str | None = None
    containers: list[_Container] | None = None
    init_containers: list[_Container] | None = None
    overhead: _Quantities | None = None


class _PodStatus(Struct, gc=False):
    phase: str = "Pending"


class _Pod(Struct, gc=False):
    metadata: _PodMeta
    spec: _PodSpec | None = None
    status: _PodStatus | None = None


class _NodeMeta(Struct, rename="camel", gc=False):
    name: str
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class _NodeSpec(Struct, rename="camel", gc=False):
    unschedulable: bool | None = None
    provider_id: str = field(default="", name="providerID")
    taints: list[dict[str, Any]] | None = None


class _Condition(Struct, gc=False):
    type: str = ""
    status: str | UnsetType = UNSET  # absent: "Unknown" readiness but "" in the conditions list, as from_api
    reason: str = ""


class _NodeSystemInfo(Struct, rename="camel", gc=False):
    kubelet_version: str = ""
    system_uuid: str = field(default="", name="systemUUID")


class _NodeStatus(Struct, rename="camel", gc=False):
    capacity: _Quantities | None = None
    allocatable: _Quantities | None = None
    conditions: list[_Condition] | None = None
    node_info: _NodeSystemInfo | None = None


class _Node(Struct, gc=False):
    metadata: _NodeMeta
    spec: _NodeSpec | None = None
    status: _NodeStatus | None = None


class _ListMeta(Struct, rename="camel", gc=False):
    resource_version: str = ""
    continue_: str = field(default="", name="continue")


class _RvMeta(Struct, rename="camel", gc=False):
    resource_version: str = ""


class _Bookmark(Struct, gc=False):
    metadata: _RvMeta | None = None


class _EventLine(Struct, gc=False):
    type: str = ""
    object: Raw = Raw(b"null")


_intern = sys.intern
_NO_REQUESTS = _Quantities()
_NO_SPEC = _PodSpec()


def _reqs(c: _Container) -> _Quantities:
    return (c.resources.requests if c.resources else None) or _NO_REQUESTS


def project_pod(p: _Pod) -> PodInfo:
    spec = p.spec or _NO_SPEC
    if spec.init_containers or spec.overhead:
        overhead = spec.overhead or _NO_REQUESTS
        requests = pod_requests(
            [((r := _reqs(c)).cpu, r.memory) for c in spec.containers or ()],
            [((r := _reqs(c)).cpu, r.memory, c.restart_policy == "Always")
             for c in spec.init_containers or ()],
            (overhead.cpu, overhead.memory),
        )
    else:  # the common pod: app containers only, summed without building the argument lists
        requests = pod_requests([(r.cpu, r.memory) for r in map(_reqs, spec.containers or ())])
    meta = p.metadata  # msgspec decodes these as str: sys.intern them as model.intern does
    return PodInfo(
        _intern(meta.namespace or ""),
        meta.name,
        _intern(spec.node_name or ""),
        _intern(p.status.phase if p.status else "Pending"),
        requests,
    )


def _resources(q: _Quantities | None) -> Resources:
    return Resources.of(q.cpu, q.memory, q.pods) if q else Resources.of(None, None)


def project_node(n: _Node) -> NodeInfo:
    meta, spec, status = n.metadata, n.spec or _NodeSpec(), n.status or _NodeStatus()
    # thousands of nodes carry the same label keys and values ("kubernetes.io/os": "linux", NFD's features)
    labels = {_intern(k): _intern(v) for k, v in meta.labels.items()} if meta.labels else {}
    conditions = status.conditions or ()
    ready = next((c.status if c.status is not UNSET else "Unknown" for c in conditions if c.type == "Ready"),
                 "Unknown")
    info = status.node_info or _NodeSystemInfo()
    return NodeInfo(
        name=_intern(meta.name),  # the same str as the pods' spec.nodeName and the hostname label
        uid=meta.uid,
        resource_version=meta.resource_version,
        labels=labels,
        roles=tuple(sorted(k[len(ROLE_PREFIX):] for k in labels if k.startswith(ROLE_PREFIX))),
        ready=ready,
        unschedulable=bool(spec.unschedulable),
        capacity=_resources(status.capacity),
        allocatable=_resources(status.allocatable),
        kubelet_version=info.kubelet_version,
        system_uuid=info.system_uuid,
        provider_id=spec.provider_id,
        taints=tuple(spec.taints or ()),
        annotations={_intern(k): v for k, v in meta.annotations.items()} if meta.annotations else {},
        conditions=tuple((c.type, c.status if c.status is not UNSET else "", c.reason) for c in conditions),
    )


def _pod_key(p: PodInfo) -> Key:
    return p.namespace, p.name


def _node_key(n: NodeInfo) -> Key:
    return "", n.name


class MsgspecCodec(Generic[T]):
    """The Codec protocol (console/kube/codec.py) for one kind, through msgspec structs of `raw` type."""

    def __init__(self, kind: str, raw: type, project: Any, key: Any) -> None:
        self.kind = kind
        self._project = project
        self._key = key
        self._obj: msgspec.json.Decoder[Any] = msgspec.json.Decoder(raw)
        list_type = msgspec.defstruct(f"_{raw.__name__}List", [("metadata", _ListMeta | None, None),
                                                               ("items", list[raw] | None, None)],  # type: ignore[valid-type]
                                      gc=False)
        self._list: msgspec.json.Decoder[Any] = msgspec.json.Decoder(list_type)
        self._line = msgspec.json.Decoder(_EventLine)
        self._bookmark = msgspec.json.Decoder(_Bookmark)

    def _items(self, raws: Sequence[Any]) -> list[tuple[Key, T]]:
        project, key = self._project, self._key
        try:
            return [(key(obj), obj) for obj in map(project, raws)]
        except (ValueError, TypeError) as e:  # a quantity parse_quantity rejects, and the like
            raise MalformedResponse(f"cannot read the {self.kind}: {e}") from e

    def page(self, data: bytes) -> Page[T]:
        try:
            body = self._list.decode(data)
        except msgspec.DecodeError as e:  # ValidationError included: the message names the JSON path
            raise MalformedResponse(f"cannot decode the {self.kind} list ({len(data)} bytes): {e}") from e
        meta = body.metadata or _ListMeta()
        return Page(self._items(body.items or ()), meta.resource_version, meta.continue_)

    def event(self, line: bytes) -> Event[T]:
        try:
            env = self._line.decode(line)
            if env.type == "ERROR":
                status = msgspec.json.decode(env.object)
                return Event("ERROR", None, None, "", status if isinstance(status, dict) else {})
            if env.type == "BOOKMARK":
                meta = self._bookmark.decode(env.object).metadata or _RvMeta()
                return Event("BOOKMARK", None, None, meta.resource_version, None)
            raw = self._obj.decode(env.object)
        except msgspec.DecodeError as e:
            raise MalformedResponse(f"cannot decode a {self.kind} watch event ({len(line)} bytes): {e}") from e
        ((key, obj),) = self._items([raw])
        return Event(env.type, key, obj, raw.metadata.resource_version, None)


NODE_CODEC: MsgspecCodec[NodeInfo] = MsgspecCodec("nodes", _Node, project_node, _node_key)
POD_CODEC: MsgspecCodec[PodInfo] = MsgspecCodec("pods", _Pod, project_pod, _pod_key)
