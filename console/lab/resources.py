"""The Kubernetes resource types the lab's agents read and write through the API server (console/lab/apistore.py).

One table, keyed as the lab names a resource (`pods`, `deployments.apps`, `nodefeatures.nfd.k8s-sigs.io`), that
gives each its API path and kind, so a resource is declared once.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.lab.store import NotFound


@dataclass(frozen=True)
class ResourceType:
    plural: str
    kind: str
    group: str  # "" for the core group
    version: str
    namespaced: bool
    subresources: tuple[str, ...] = ()  # "status": written through /status
    # a custom resource: served only while its CustomResourceDefinition `<plural>.<group>` exists
    custom: bool = False

    @property
    def key(self) -> str:
        """The lab's name of it: `pods`, `nodefeatures.nfd.k8s-sigs.io`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


NFD_GROUP = "nfd.k8s-sigs.io"
APIEXTENSIONS_GROUP = "apiextensions.k8s.io"
CRD_RESOURCE = f"customresourcedefinitions.{APIEXTENSIONS_GROUP}"
COORDINATION_GROUP = "coordination.k8s.io"
RBAC_GROUP = "rbac.authorization.k8s.io"
STATUS = ("status",)

RESOURCES: dict[str, ResourceType] = {
    r.key: r
    for r in (
        ResourceType("namespaces", "Namespace", "", "v1", False, STATUS),
        ResourceType("nodes", "Node", "", "v1", False, STATUS),
        ResourceType("pods", "Pod", "", "v1", True, STATUS),
        ResourceType("events", "Event", "", "v1", True),
        ResourceType("configmaps", "ConfigMap", "", "v1", True),
        ResourceType("services", "Service", "", "v1", True, STATUS),  # NFD v0.9's nfd-master (console/lab/podnet.py)
        ResourceType("endpointslices", "EndpointSlice", "discovery.k8s.io", "v1", True),
        ResourceType("serviceaccounts", "ServiceAccount", "", "v1", True),  # NFD's (console/lab/nfd_release.py)
        ResourceType("leases", "Lease", COORDINATION_GROUP, "v1", True),
        # the scenarios' workloads (console/lab/workloads.py), run by kube-controller-manager
        ResourceType("deployments", "Deployment", "apps", "v1", True, STATUS),
        ResourceType("replicasets", "ReplicaSet", "apps", "v1", True, STATUS),
        ResourceType("statefulsets", "StatefulSet", "apps", "v1", True, STATUS),
        ResourceType("daemonsets", "DaemonSet", "apps", "v1", True, STATUS),
        ResourceType("jobs", "Job", "batch", "v1", True, STATUS),
        ResourceType("poddisruptionbudgets", "PodDisruptionBudget", "policy", "v1", True, STATUS),
        ResourceType("customresourcedefinitions", "CustomResourceDefinition", APIEXTENSIONS_GROUP, "v1", False,
                     STATUS),
        # NFD's CRDs (its release's manifests install them, console/lab/nfd_release.py)
        ResourceType("nodefeatures", "NodeFeature", NFD_GROUP, "v1alpha1", True, custom=True),
        ResourceType("nodefeaturerules", "NodeFeatureRule", NFD_GROUP, "v1alpha1", False, custom=True),
        ResourceType("nodefeaturegroups", "NodeFeatureGroup", NFD_GROUP, "v1alpha1", True, STATUS, custom=True),
        # the lab's RBAC users (console/lab/rbac_policy.py)
        ResourceType("clusterroles", "ClusterRole", RBAC_GROUP, "v1", False),
        ResourceType("clusterrolebindings", "ClusterRoleBinding", RBAC_GROUP, "v1", False),
        ResourceType("roles", "Role", RBAC_GROUP, "v1", True),
        ResourceType("rolebindings", "RoleBinding", RBAC_GROUP, "v1", True),
    )
}


def rtype(resource: str) -> ResourceType:
    """The resource's type; NotFound as the API server answers a resource it does not serve."""
    try:
        return RESOURCES[resource]
    except KeyError:
        raise NotFound(f"the server could not find the requested resource ({resource})") from None
