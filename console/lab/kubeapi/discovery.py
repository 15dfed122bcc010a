"""Discovery documents (/api, /apis, per group-version), /version and a minimal OpenAPI."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from console.lab.resources import RESOURCES, ResourceType

Obj = dict[str, Any]
Served = Callable[[ResourceType], bool]  # Store.served: custom resources only while their CRD exists


def serve_all(_rt: ResourceType) -> bool:
    return True


def _served(served: Served) -> list[ResourceType]:
    return [rt for rt in RESOURCES.values() if served(rt)]

VERSION: Obj = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-lab",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-12-11T00:00:00Z",
    "goVersion": "go1.23.4",
    "compiler": "gc",
    "platform": "linux/amd64",
}

POLICY_GROUP = "policy"

# Subresources: (verbs, kind, group, version) as the real API lists them.
_SUBRESOURCES: dict[str, tuple[list[str], str, str, str]] = {
    "status": (["get", "patch", "update"], "", "", ""),
    "binding": (["create"], "Binding", "", ""),
    "eviction": (["create"], "Eviction", POLICY_GROUP, "v1"),
    "log": (["get"], "Pod", "", ""),
}


def group_versions(served: Served = serve_all) -> dict[str, str]:
    """Served API groups -> their (only) version; "" is the core group."""
    out: dict[str, str] = {}
    for rt in _served(served):
        out.setdefault(rt.group, rt.version)
    return out


def api_versions(server_address: str) -> Obj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group(name: str, version: str) -> Obj:
    gv = {"groupVersion": f"{name}/{version}", "version": version}
    return {"name": name, "versions": [gv], "preferredVersion": gv}


def api_group_list(served: Served = serve_all) -> Obj:
    groups = [_group(g, v) for g, v in sorted(group_versions(served).items()) if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(name: str, served: Served = serve_all) -> Obj | None:
    version = group_versions(served).get(name)
    if not name or version is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, version)}


def _resource_entries(rt: ResourceType) -> list[Obj]:
    entry: Obj = {
        "name": rt.plural,
        "singularName": rt.singular or rt.kind.lower(),
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    out = [entry]
    for sub in rt.subresources:
        verbs, kind, group, version = _SUBRESOURCES.get(sub, (["get"], "", "", ""))
        sub_entry: Obj = {"name": f"{rt.plural}/{sub}", "singularName": "", "namespaced": rt.namespaced,
                          "kind": kind or rt.kind, "verbs": verbs}
        if group:
            sub_entry["group"] = group
            sub_entry["version"] = version
        out.append(sub_entry)
    return out


def resource_list(group: str, version: str, served: Served = serve_all) -> Obj | None:
    if group_versions(served).get(group) != version:
        return None
    resources: list[Obj] = []
    for rt in _served(served):
        if rt.group == group:
            resources.extend(_resource_entries(rt))
    if not group:  # the bindings collection (what the scheduler POSTs to)
        resources.insert(0, {"name": "bindings", "singularName": "binding", "namespaced": True, "kind": "Binding",
                             "verbs": ["create"]})
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


# -- OpenAPI v3 ------------------------------------------------------------------------
# kubectl replace/apply/create/taint ask /openapi/v3 whether PATCH on a kind takes the
# `fieldValidation` parameter; if not, they fall back to client-side validation that needs
# the full /openapi/v2 schema. A doc listing the PATCH operations with their parameters is
# enough for server-side validation; apply then uses its compiled-in patch metadata.
_PATCH_PARAMS = ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_v3_root(served: Served = serve_all) -> Obj:
    paths = {}
    for group, version in sorted(group_versions(served).items()):
        p = _gv_path(group, version)
        paths[p] = {"serverRelativeURL": f"/openapi/v3/{p}?hash={_HASH}"}
    return {"paths": paths}


def openapi_v3_doc(gv_path: str, served: Served = serve_all) -> Obj | None:
    for group, version in group_versions(served).items():
        if _gv_path(group, version) == gv_path:
            break
    else:
        return None
    paths: Obj = {}
    for rt in _served(served):
        if rt.group != group:
            continue
        base = f"/{gv_path}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"/{gv_path}/{rt.plural}"
        gvk = {"group": group, "version": version, "kind": rt.kind}
        params = [{"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
                  for p in _PATCH_PARAMS]
        op = {
            "operationId": f"patch{rt.kind}",
            "parameters": params,
            "responses": {"200": {"description": "OK"}},
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": gvk,
        }
        paths[f"{base}/{{name}}"] = {"patch": op}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": VERSION["gitVersion"]},
        "paths": paths,
        "components": {"schemas": {}},
    }


_HASH = "0" * 128
