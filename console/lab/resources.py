"""The Kubernetes resource types the lab's API server serves.

One table, shared by the store (scoping), the HTTP layer (URLs, discovery) and
the simulators, so a resource is declared once.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ResourceType:
    plural: str
    kind: str
    group: str  # "" for the core group
    version: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = (
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    )
    subresources: tuple[str, ...] = field(default=())
    singular: str = ""
    # a custom resource: served only while its CustomResourceDefinition `<plural>.<group>` exists
    custom: bool = False

    @property
    def key(self) -> str:
        """Store key: `pods`, `nodefeatures.nfd.k8s-sigs.io`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"


NFD_GROUP = "nfd.k8s-sigs.io"
APIEXTENSIONS_GROUP = "apiextensions.k8s.io"
CRD_RESOURCE = f"customresourcedefinitions.{APIEXTENSIONS_GROUP}"
COORDINATION_GROUP = "coordination.k8s.io"
RBAC_GROUP = "rbac.authorization.k8s.io"
AUTHORIZATION_GROUP = "authorization.k8s.io"
AUTHENTICATION_GROUP = "authentication.k8s.io"

RESOURCES: dict[str, ResourceType] = {
    r.key: r
    for r in (
        ResourceType("namespaces", "Namespace", "", "v1", False, ("ns",), singular="namespace",
                     subresources=("status",)),
        ResourceType("nodes", "Node", "", "v1", False, ("no",), singular="node",
                     subresources=("status",)),
        ResourceType("pods", "Pod", "", "v1", True, ("po",), singular="pod",
                     subresources=("status", "binding", "eviction", "log")),
        ResourceType("events", "Event", "", "v1", True, ("ev",), singular="event"),
        ResourceType("configmaps", "ConfigMap", "", "v1", True, ("cm",), singular="configmap"),
        ResourceType("leases", "Lease", COORDINATION_GROUP, "v1", True, (), singular="lease"),
        # what a cluster has around a drain (console/lab/controllers.py runs them)
        ResourceType("deployments", "Deployment", "apps", "v1", True, ("deploy",), singular="deployment",
                     subresources=("status",)),
        ResourceType("replicasets", "ReplicaSet", "apps", "v1", True, ("rs",), singular="replicaset",
                     subresources=("status",)),
        ResourceType("statefulsets", "StatefulSet", "apps", "v1", True, ("sts",), singular="statefulset",
                     subresources=("status",)),
        ResourceType("daemonsets", "DaemonSet", "apps", "v1", True, ("ds",), singular="daemonset",
                     subresources=("status",)),
        # an HPC or training job's pods (the capacity planner's scenario; console/lab/controllers.py runs them)
        ResourceType("jobs", "Job", "batch", "v1", True, (), singular="job", subresources=("status",)),
        ResourceType("poddisruptionbudgets", "PodDisruptionBudget", "policy", "v1", True, ("pdb",),
                     singular="poddisruptionbudget", subresources=("status",)),
        ResourceType("customresourcedefinitions", "CustomResourceDefinition", APIEXTENSIONS_GROUP, "v1", False,
                     ("crd", "crds"), singular="customresourcedefinition", subresources=("status",)),
        # NFD's CRDs (console/lab/nfd_deploy.py creates them for the versions that have them)
        ResourceType("nodefeatures", "NodeFeature", NFD_GROUP, "v1alpha1", True, (),
                     singular="nodefeature", custom=True),
        ResourceType("nodefeaturerules", "NodeFeatureRule", NFD_GROUP, "v1alpha1", False,
                     ("nfr",), singular="nodefeaturerule", custom=True),
        # RBAC (console/lab/kubeapi/rbac.py evaluates them) and the reviews that ask it (kubeapi/reviews.py)
        ResourceType("clusterroles", "ClusterRole", RBAC_GROUP, "v1", False, (), singular="clusterrole"),
        ResourceType("clusterrolebindings", "ClusterRoleBinding", RBAC_GROUP, "v1", False, (),
                     singular="clusterrolebinding"),
        ResourceType("roles", "Role", RBAC_GROUP, "v1", True, (), singular="role"),
        ResourceType("rolebindings", "RoleBinding", RBAC_GROUP, "v1", True, (), singular="rolebinding"),
        ResourceType("selfsubjectaccessreviews", "SelfSubjectAccessReview", AUTHORIZATION_GROUP, "v1", False, (),
                     ("create",), singular="selfsubjectaccessreview"),
        ResourceType("selfsubjectrulesreviews", "SelfSubjectRulesReview", AUTHORIZATION_GROUP, "v1", False, (),
                     ("create",), singular="selfsubjectrulesreview"),
        ResourceType("selfsubjectreviews", "SelfSubjectReview", AUTHENTICATION_GROUP, "v1", False, (),
                     ("create",), singular="selfsubjectreview"),
    )
}


def by_plural(group: str, plural: str) -> ResourceType | None:
    key = f"{plural}.{group}" if group else plural
    return RESOURCES.get(key)
