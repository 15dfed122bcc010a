"""NFD's feature model (api/nfd/v1alpha1): flags, attributes and instances, and NodeFeature merging."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

NODE_NAME_LABEL = "nfd.node.kubernetes.io/node-name"
API_VERSION = "nfd.k8s-sigs.io/v1alpha1"


class InvalidObject(ValueError):
    """A NodeFeature / NodeFeatureRule dict does not have the API shape."""


@dataclass
class Features:
    """Features of one node. Flags map name -> set of element names; instances are lists of attribute dicts.

    A name present in `flags` with an empty set is a present-but-empty feature (Go: non-nil empty map).
    """

    flags: dict[str, set[str]] = field(default_factory=dict)
    attributes: dict[str, dict[str, str]] = field(default_factory=dict)
    instances: dict[str, list[dict[str, str]]] = field(default_factory=dict)

    def copy(self) -> Features:
        return Features(
            {k: set(v) for k, v in self.flags.items()},
            {k: dict(v) for k, v in self.attributes.items()},
            {k: [dict(i) for i in v] for k, v in self.instances.items()},
        )

    def merge_from(self, other: Features) -> None:
        """MergeInto: flags and attributes overwrite, instance lists append."""
        for k, s in other.flags.items():
            self.flags.setdefault(k, set()).update(s)
        for k, a in other.attributes.items():
            self.attributes.setdefault(k, {}).update(a)
        for k, lst in other.instances.items():
            self.instances.setdefault(k, []).extend(dict(i) for i in lst)

    def names(self) -> set[str]:
        return set(self.flags) | set(self.attributes) | set(self.instances)

    def to_api(self) -> dict[str, Any]:
        """The `spec.features` shape of a NodeFeature."""
        out: dict[str, Any] = {}
        if self.flags:
            out["flags"] = {k: {"elements": {e: {} for e in sorted(v)}} for k, v in sorted(self.flags.items())}
        if self.attributes:
            out["attributes"] = {k: {"elements": dict(sorted(v.items()))} for k, v in sorted(self.attributes.items())}
        if self.instances:
            out["instances"] = {
                k: {"elements": [{"attributes": dict(i)} for i in v]} for k, v in sorted(self.instances.items())
            }
        return out

    @classmethod
    def from_api(cls, spec_features: Mapping[str, Any] | None) -> Features:
        """Parse `spec.features`; raises InvalidObject on a wrong shape."""
        f = cls()
        if not spec_features:
            return f
        if not isinstance(spec_features, Mapping):
            raise InvalidObject("spec.features must be a mapping")
        for name, fs in _section(spec_features, "flags").items():
            elems = _elements(fs, f"spec.features.flags.{name}")
            if elems is not None and not isinstance(elems, Mapping):
                raise InvalidObject(f"spec.features.flags.{name}.elements must be a mapping")
            f.flags[name] = set(elems or {})
        for name, fs in _section(spec_features, "attributes").items():
            elems = _elements(fs, f"spec.features.attributes.{name}")
            if elems is not None and not isinstance(elems, Mapping):
                raise InvalidObject(f"spec.features.attributes.{name}.elements must be a mapping")
            f.attributes[name] = {str(k): _str(v) for k, v in (elems or {}).items()}
        for name, fs in _section(spec_features, "instances").items():
            elems = _elements(fs, f"spec.features.instances.{name}")
            if elems is not None and not isinstance(elems, list):
                raise InvalidObject(f"spec.features.instances.{name}.elements must be a list")
            lst = []
            for i, inst in enumerate(elems or []):
                attrs = inst.get("attributes") if isinstance(inst, Mapping) else None
                if attrs is not None and not isinstance(attrs, Mapping):
                    raise InvalidObject(f"spec.features.instances.{name}.elements[{i}].attributes must be a mapping")
                lst.append({str(k): _str(v) for k, v in (attrs or {}).items()})
            f.instances[name] = lst
        return f


def _section(spec_features: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    sec = spec_features.get(kind) or {}
    if not isinstance(sec, Mapping):
        raise InvalidObject(f"spec.features.{kind} must be a mapping of feature name -> {{elements}}")
    return sec


def _elements(fs: Any, where: str) -> Any:
    if fs is None:
        return None
    if not isinstance(fs, Mapping):
        raise InvalidObject(f"{where} must be a mapping with 'elements'")
    return fs.get("elements")


def _str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return "" if v is None else str(v)


@dataclass
class NodeFeatureSpec:
    """One NodeFeature's spec plus the identity the master sorts by."""

    name: str
    namespace: str
    node_name: str
    features: Features
    labels: dict[str, str]

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> NodeFeatureSpec:
        if not isinstance(obj, Mapping):
            raise InvalidObject("a NodeFeature must be a mapping")
        kind = obj.get("kind")
        if kind not in (None, "NodeFeature"):
            raise InvalidObject(f"expected kind NodeFeature, got {kind!r}")
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        if not isinstance(meta, Mapping) or not isinstance(spec, Mapping):
            raise InvalidObject("NodeFeature metadata and spec must be mappings")
        labels = spec.get("labels") or {}
        if not isinstance(labels, Mapping):
            raise InvalidObject("NodeFeature spec.labels must be a mapping")
        name = str(meta.get("name") or "")
        meta_labels = meta.get("labels") or {}
        if not isinstance(meta_labels, Mapping):
            raise InvalidObject("NodeFeature metadata.labels must be a mapping")
        node = str(meta_labels.get(NODE_NAME_LABEL) or "")
        return cls(
            name=name,
            namespace=str(meta.get("namespace") or ""),
            node_name=node,
            features=Features.from_api(spec.get("features")),
            labels={str(k): _str(v) for k, v in labels.items()},
        )


def sort_node_features(objs: Iterable[NodeFeatureSpec], nfd_namespace: str) -> list[NodeFeatureSpec]:
    """The master's order: its own namespace first, then by name, then by namespace."""
    return sorted(objs, key=lambda o: (o.namespace != nfd_namespace, o.name, o.namespace))


def make_node_feature(node_name: str, features: Features, labels: Mapping[str, str] | None = None,
                      namespace: str = "node-feature-discovery", worker_version: str | None = None) -> dict[str, Any]:
    """A NodeFeature object (nfd.k8s-sigs.io/v1alpha1) as nfd-worker writes it."""
    meta: dict[str, Any] = {"name": node_name, "namespace": namespace, "labels": {NODE_NAME_LABEL: node_name}}
    if worker_version:
        meta["annotations"] = {"nfd.node.kubernetes.io/worker.version": worker_version}
    return {
        "apiVersion": API_VERSION,
        "kind": "NodeFeature",
        "metadata": meta,
        "spec": {"features": features.to_api(), "labels": dict(labels or {})},
    }
