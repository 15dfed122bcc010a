"""Find NFD in the cluster, whatever namespace: `discover_nfd(api_client) -> NfdDeployment | None`.

Reads (blocking: call it from a thread worker): the Deployments and DaemonSets of all namespaces (apps/v1, two
lists, as `kubectl get deploy,ds -A`), the ConfigMaps their NFD containers take a config file from, the API
group nfd.k8s-sigs.io/v1alpha1's resources (is the NodeFeature CRD served: `kubectl api-resources`), and, only
when no image tag names the version, one NodeFeature (worker.version annotation) or the Nodes' annotations
(NFD up to v0.14). What the workloads are is decided by console/nfd/deployment.py (pure).

RBAC: a user who may not list deployments/daemonsets in all namespaces still gets what can be read: the lists
are retried in the namespaces NFD's distributions install into (NFD's manifests, the NVIDIA GPU operator,
OpenShift's NFD operator); what was refused is named in the result's warnings, as console/kube/access.py's
Need prints it ("list deployments.apps"). Nothing readable at all: NfdDiscoveryError with `.missing`.
Any other failure (unreachable, TLS, 401, 5xx) is an NfdDiscoveryError raised from the client's exception, so
console/faults.py still classifies it.
"""

from __future__ import annotations

import contextlib
from typing import Any

from console.kube import rest
from console.kube.access import APPS, NFD_GROUP, Need
from console.nfd import deployment as D
from console.nfd import versions as V

NFD_VERSION = "v1alpha1"
# where NFD's own manifests (deployment/base, the Helm chart's usual release namespace), the NVIDIA GPU operator
# and OpenShift's NFD operator install it: where to look when listing every namespace is forbidden
KNOWN_NAMESPACES = ("node-feature-discovery", "gpu-operator", "nvidia-gpu-operator", "openshift-nfd", "kube-system")
WORKER_VERSION_ANNOTATION = "nfd.node.kubernetes.io/worker.version"
MASTER_VERSION_ANNOTATION = "nfd.node.kubernetes.io/master.version"
NODE_NAME_LABEL = "nfd.node.kubernetes.io/node-name"
TIMEOUT_S = 15.0


class NfdDiscoveryError(Exception):
    """Discovery failed: the message says what and what to do; `.missing` names the RBAC permissions refused."""

    def __init__(self, message: str, missing: tuple[str, ...] = (), what: str = "") -> None:
        super().__init__(message)
        self.missing = missing
        self.what = what  # the call that failed ("listing deployments in all namespaces"), for a classified fault


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


def _message(exc: BaseException) -> str:
    from console.faults import redact, status_message

    return redact(status_message(exc) or str(getattr(exc, "reason", "") or exc))


def _failed(what: str, exc: BaseException) -> NfdDiscoveryError:
    err = NfdDiscoveryError(f"cannot find NFD: {what} failed ({_message(exc)})", what=what)
    err.__cause__ = exc
    return err


def _items(api_client: Any, path: str, **kw: Any) -> list[dict[str, Any]]:
    return list(rest.get(api_client, path, timeout=TIMEOUT_S, **kw).get("items") or [])


def _list_workloads(api_client: Any, warnings: list[str], missing: list[str]) -> tuple[list[dict[str, Any]], bool]:
    """Every Deployment and DaemonSet the user may list (kind set on each), and whether anything could be listed."""
    from kubernetes.client.rest import ApiException

    out: list[dict[str, Any]] = []
    listed = False
    for kind, resource in (("Deployment", "deployments"), ("DaemonSet", "daemonsets")):
        try:
            items = _items(api_client, f"/apis/apps/v1/{resource}")
            listed = True
        except ApiException as e:
            if _status(e) != 403:
                raise _failed(f"listing {resource} in all namespaces", e) from e
            missing.append(str(Need("list", resource, APPS)))
            items, seen = [], []
            for ns in KNOWN_NAMESPACES:
                try:
                    items += _items(api_client, f"/apis/apps/v1/namespaces/{{namespace}}/{resource}",
                                    params={"namespace": ns})
                    seen.append(ns)
                    listed = True
                except ApiException as e2:
                    if _status(e2) not in (403, 404):
                        raise _failed(f"listing {resource} in {ns}", e2) from e2
            warnings.append(f"cannot list {resource}.apps in all namespaces (403 Forbidden: this user lacks "
                            f"`{Need('list', resource, APPS)}` cluster-wide); "
                            + (f"looked only in {', '.join(seen)}" if seen else
                               f"none of {', '.join(KNOWN_NAMESPACES)} could be read either"))
        except Exception as e:  # unreachable, TLS, timeouts: the client's own exceptions, classified by faults.py
            raise _failed(f"listing {resource} in all namespaces", e) from e
        for obj in items:
            obj["kind"] = kind
        out += items
    return out, listed


def _config_maps(api_client: Any, wanted: set[tuple[str, str]], warnings: list[str]
                 ) -> dict[tuple[str, str], dict[str, Any] | None]:
    from kubernetes.client.rest import ApiException

    out: dict[tuple[str, str], dict[str, Any] | None] = {}
    for ns, name in sorted(wanted):
        try:
            out[(ns, name)] = rest.get(api_client, "/api/v1/namespaces/{namespace}/configmaps/{name}",
                                       params={"namespace": ns, "name": name}, timeout=TIMEOUT_S)
        except ApiException as e:
            if _status(e) == 403:
                warnings.append(f"cannot read ConfigMap {ns}/{name} (403 Forbidden: this user lacks "
                                f"`{Need('get', 'configmaps', namespace=ns)}`)")
            elif _status(e) != 404:
                raise _failed(f"reading ConfigMap {ns}/{name}", e) from e
            out[(ns, name)] = None  # 404: the config volume names a ConfigMap that is not there (pod stays pending)
    return out


def node_feature_crd_served(api_client: Any) -> bool:
    """Whether the API server serves nodefeatures.nfd.k8s-sigs.io/v1alpha1 (API discovery, as kubectl does)."""
    from kubernetes.client.rest import ApiException

    try:
        resources = rest.get(api_client, f"/apis/{NFD_GROUP}/{NFD_VERSION}", timeout=TIMEOUT_S).get("resources") or []
    except ApiException as e:
        if _status(e) in (403, 404, 503):  # not served (404), or an unavailable aggregated group / refused
            return False
        raise _failed(f"API discovery of {NFD_GROUP}/{NFD_VERSION}", e) from e
    return any(r.get("name") == "nodefeatures" for r in resources)


def _version_hint(api_client: Any, crd_served: bool) -> tuple[V.NfdVersion, str] | None:
    """The version NFD recorded: one NodeFeature of a worker (v0.12+), else the Nodes' annotations (up to v0.14)."""
    from kubernetes.client.rest import ApiException

    found: list[tuple[str, str]] = []
    try:
        if crd_served:
            from console.kube.nfdstore import NfdStoreError, cluster_nfd_version

            with contextlib.suppress(NfdStoreError):  # only a hint
                if v := cluster_nfd_version(api_client):
                    found.append((v, "NodeFeature annotation " + WORKER_VERSION_ANNOTATION))
        if not found:
            for node in _items(api_client, "/api/v1/nodes", limit=5):
                ann = (node.get("metadata") or {}).get("annotations") or {}
                for key in (MASTER_VERSION_ANNOTATION, WORKER_VERSION_ANNOTATION):
                    if ann.get(key):
                        found.append((ann[key], f"Node annotation {key}"))
    except ApiException:
        return None  # only a hint: the status then says the version is unknown
    for text, source in found:
        try:
            return V.parse_version(text), source
        except V.UnsupportedVersion:
            continue
    return None


def discover_nfd(api_client: Any) -> D.NfdDeployment | None:
    """NFD as this cluster runs it, None when no Deployment/DaemonSet runs nfd-master or nfd-worker.
    NfdDiscoveryError when nothing could be read (`.missing`) or the API server failed."""
    warnings: list[str] = []
    missing: list[str] = []
    objects, listed = _list_workloads(api_client, warnings, missing)
    if not listed:
        raise NfdDiscoveryError(
            "cannot find NFD: this user may not list deployments or daemonsets (403 Forbidden) in any namespace — "
            f"it needs {' and '.join(f'`{m}`' for m in missing)} (the `view` ClusterRole has them); ask for them or "
            "use a context that has them", tuple(missing))
    nfd_objects = [o for o in objects if D.nfd_containers(o)]
    if not nfd_objects:
        if missing:  # not found where we could look: say that it may be elsewhere
            raise NfdDiscoveryError(
                "no NFD found in the namespaces this user may read (" + "; ".join(warnings) + ")", tuple(missing))
        return None
    cms = _config_maps(api_client, D.wanted_config_maps(nfd_objects), warnings)
    crd = node_feature_crd_served(api_client)
    hint = None
    if all(D.image_version(str(c.get("image") or "")) is None
           for o in nfd_objects for _r, c, _a in D.nfd_containers(o)):
        hint = _version_hint(api_client, crd)
    return D.from_objects(nfd_objects, cms, crd_served=crd, version_hint=hint, warnings=warnings)
