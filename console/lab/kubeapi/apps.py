"""apps/v1 workloads, batch/v1 Jobs and policy/v1 PodDisruptionBudgets: create-time defaults and `kubectl get`
Table columns.

Defaults as pkg/apis/apps/v1/defaults.go sets them (replicas 1, RollingUpdate 25 %/25 %,
revisionHistoryLimit 10, progressDeadlineSeconds 600, OrderedReady, the pod template's defaults); columns
as pkg/printers/internalversion/printers.go prints them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

Obj = dict[str, Any]


def defaults(key: str, obj: Obj, pod_spec_defaults: Callable[[Obj], None]) -> None:
    """In place, for the apps/v1 and policy/v1 kinds; status starts empty (the controllers fill it). The pod
    template gets the pod's own defaults (SetDefaults_PodSpec): `pod_spec_defaults(spec)`, passed in by the
    validation module that owns them."""
    spec = obj.setdefault("spec", {})

    def _template_defaults(workload_spec: Obj) -> None:
        pod_spec_defaults(workload_spec.setdefault("template", {}).setdefault("spec", {}))

    if key == "deployments.apps":
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        strategy = spec.setdefault("strategy", {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            strategy.setdefault("rollingUpdate", {}).setdefault("maxUnavailable", "25%")
            strategy["rollingUpdate"].setdefault("maxSurge", "25%")
        _template_defaults(spec)
    elif key == "replicasets.apps":
        spec.setdefault("replicas", 1)
        _template_defaults(spec)
    elif key == "statefulsets.apps":
        spec.setdefault("replicas", 1)
        spec.setdefault("podManagementPolicy", "OrderedReady")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        _template_defaults(spec)
    elif key == "daemonsets.apps":
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("updateStrategy", {"type": "RollingUpdate",
                                           "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        _template_defaults(spec)
    else:
        return
    obj["status"] = {}


# -- Table columns ----------------------------------------------------------------------------------------
RowFn = Callable[[Obj, datetime], list[Any]]


def _containers(o: Obj) -> tuple[str, str]:
    cs = (((o.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    return ",".join(c.get("name", "") for c in cs), ",".join(c.get("image", "") for c in cs)


def _selector(o: Obj) -> str:
    sel = (o.get("spec") or {}).get("selector") or {}
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or []:
        op, vals = e.get("operator", ""), ",".join(e.get("values") or [])
        parts.append({"In": f"{e.get('key')} in ({vals})", "NotIn": f"{e.get('key')} notin ({vals})",
                      "Exists": e.get("key", ""), "DoesNotExist": f"!{e.get('key')}"}.get(op, ""))
    return ",".join(parts) or "<none>"


def tables(col: Callable[..., Obj], name: Obj, age_col: Obj, age: Callable[[str | None, datetime], str]
           ) -> dict[str, tuple[list[Obj], RowFn]]:
    """The printers for the table module (its column and age helpers passed in)."""
    wide = [col("Containers", priority=1, desc="Names of each container in the template."),
            col("Images", priority=1, desc="Images referenced by each container in the template."),
            col("Selector", priority=1, desc="Label selector for pods.")]

    def created(o: Obj, now: datetime) -> str:
        return age(o["metadata"].get("creationTimestamp"), now)

    def deploy(o: Obj, now: datetime) -> list[Any]:
        spec, st = o.get("spec") or {}, o.get("status") or {}
        return [o["metadata"]["name"], f"{st.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
                st.get("updatedReplicas", 0), st.get("availableReplicas", 0), created(o, now), *_containers(o),
                _selector(o)]

    def rs(o: Obj, now: datetime) -> list[Any]:
        spec, st = o.get("spec") or {}, o.get("status") or {}
        return [o["metadata"]["name"], spec.get("replicas", 1), st.get("replicas", 0), st.get("readyReplicas", 0),
                created(o, now), *_containers(o), _selector(o)]

    def sts(o: Obj, now: datetime) -> list[Any]:
        spec, st = o.get("spec") or {}, o.get("status") or {}
        return [o["metadata"]["name"], f"{st.get('readyReplicas', 0)}/{spec.get('replicas', 1)}", created(o, now),
                *_containers(o)]

    def ds(o: Obj, now: datetime) -> list[Any]:
        st = o.get("status") or {}
        sel = ((((o.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeSelector") or {})
        return [o["metadata"]["name"], st.get("desiredNumberScheduled", 0), st.get("currentNumberScheduled", 0),
                st.get("numberReady", 0), st.get("updatedNumberScheduled", 0), st.get("numberAvailable", 0),
                ",".join(f"{k}={v}" for k, v in sorted(sel.items())) or "<none>", created(o, now), *_containers(o),
                _selector(o)]

    def pdb(o: Obj, now: datetime) -> list[Any]:
        spec, st = o.get("spec") or {}, o.get("status") or {}
        return [o["metadata"]["name"], str(spec["minAvailable"]) if "minAvailable" in spec else "N/A",
                str(spec["maxUnavailable"]) if "maxUnavailable" in spec else "N/A",
                st.get("disruptionsAllowed", 0), created(o, now)]

    def job(o: Obj, now: datetime) -> list[Any]:
        """printers.go printJob (v1.28+: the Status column)."""
        spec, st = o.get("spec") or {}, o.get("status") or {}
        done = st.get("succeeded", 0)
        if spec.get("completions") is not None:
            completions = f"{done}/{spec['completions']}"
        else:
            parallelism = int(spec.get("parallelism", 0) or 0)
            completions = f"{done}/1 of {parallelism}" if parallelism > 1 else f"{done}/1"
        conds = {c.get("type") for c in st.get("conditions") or [] if c.get("status") == "True"}
        status = next((s for s, c in (("Complete", "Complete"), ("Failed", "Failed")) if c in conds), "")
        if not status:
            status = "Terminating" if o["metadata"].get("deletionTimestamp") else next(
                (c for c in ("Suspended", "FailureTarget") if c in conds), "Running")
        # HumanDuration(time.Since(startTime)) while it runs, completionTime - startTime once complete
        duration = ""
        if st.get("startTime"):
            end = datetime.fromisoformat(st["completionTime"].replace("Z", "+00:00")) if st.get("completionTime") \
                else now
            duration = age(st["startTime"], end)
        return [o["metadata"]["name"], status, completions, duration, created(o, now), *_containers(o),
                _selector(o)]

    return {
        "jobs.batch": ([name, col("Status", desc="Status of the job."),
                        col("Completions", desc="The completion status of the job."),
                        col("Duration", desc="Time required to complete the job."), age_col, *wide], job),
        "deployments.apps": ([name, col("Ready", desc="Number of the pod with ready state"),
                              col("Up-to-date", "integer", desc="Total number of non-terminated pods targeted by "
                                  "this deployment that have the desired template spec."),
                              col("Available", "integer", desc="Total number of available pods (ready for at least "
                                  "minReadySeconds) targeted by this deployment."), age_col, *wide], deploy),
        "replicasets.apps": ([name, col("Desired", "integer", desc="Number of desired pods."),
                              col("Current", "integer", desc="Number of actual pods."),
                              col("Ready", "integer", desc="Number of ready pods."), age_col, *wide], rs),
        "statefulsets.apps": ([name, col("Ready", desc="Number of the pod with ready state"), age_col, *wide[:2]],
                              sts),
        "daemonsets.apps": ([name, col("Desired", "integer", desc="The number of nodes that should be running the "
                                       "daemon pod."),
                             col("Current", "integer", desc="The number of nodes running at least one daemon pod."),
                             col("Ready", "integer", desc="The number of nodes that should be running the daemon "
                                 "pod and have one or more of the daemon pod running and ready."),
                             col("Up-to-date", "integer", desc="The total number of nodes that are running updated "
                                 "daemon pod."),
                             col("Available", "integer", desc="The number of nodes that should be running the "
                                 "daemon pod and have one or more of the daemon pod running and available."),
                             col("Node Selector", desc="NodeSelector is a selector which must be true for the pod "
                                 "to fit on a node."), age_col, *wide], ds),
        "poddisruptionbudgets.policy": ([name, col("Min Available", desc="The minimum number of pods that must be "
                                                   "available"),
                                         col("Max Unavailable", desc="The maximum number of pods that may be "
                                             "unavailable"),
                                         col("Allowed Disruptions", "integer", desc="Calculated number of pods that "
                                             "may be disrupted at this time"), age_col], pdb),
    }
