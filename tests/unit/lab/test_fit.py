"""Scheduling predicates and the exact FailedScheduling text per Kubernetes version."""

from __future__ import annotations

import pytest

from console.lab import fit
from console.lab.fit import NodeInfo

GI = 1024**3
MASTER = {"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}


def node(name, cpu="2", memory="4030532Ki", pods="110", **kw):
    return NodeInfo(name=name, allocatable=fit.resources({"cpu": cpu, "memory": memory, "pods": pods}), **kw)


def pod(cpu="3", memory="5Gi", **spec):
    return {"metadata": {"name": "nginx", "namespace": "default"},
            "spec": {"containers": [{"name": "nginx", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
                     **spec}}


def message(p, nodes, wording=fit.V1_21):
    req = fit.pod_requests(p)
    reasons = [fit.filter_node(p, req, n, wording) for n in nodes]
    assert all(reasons), "every node must reject the pod for a FitError"
    return fit.fit_error(len(nodes), reasons, wording)


def report_nodes():
    return [node("kube-controlplane01", taints=[MASTER]), node("kube-worker01"), node("kube-worker02")]


def test_field_report_message_v1_21():
    assert message(pod(), report_nodes()) == (
        "0/3 nodes are available: 1 node(s) had taint {node-role.kubernetes.io/master: }, "
        "that the pod didn't tolerate, 2 Insufficient cpu, 2 Insufficient memory."
    )


def test_current_wording_has_untolerated_taints_and_preemption_suffix():
    assert message(pod(), report_nodes(), fit.CURRENT) == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu, 2 Insufficient memory. "
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod.."
    )


def test_v1_24_wording_names_the_taint():
    msg = message(pod(), report_nodes(), fit.V1_24)
    assert msg.startswith(
        "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/master: }, ")
    assert msg.endswith("..")


@pytest.mark.parametrize(("version", "wording"), [
    ("v1.21.6", fit.V1_21), ("v1.23.0", fit.V1_21), ("v1.24.3", fit.V1_24), ("v1.32.4", fit.V1_24),
    ("v1.35.0", fit.CURRENT), ("garbage", fit.CURRENT),
])
def test_wording_for_version(version, wording):
    assert fit.wording_for(version) is wording


def test_reasons_sort_as_strings_including_counts():
    nodes = [node(f"n{i}", cpu="1") for i in range(10)] + [node("m", cpu="8", memory="1Gi"), node("t", taints=[MASTER])]
    msg = message(pod(cpu="2", memory="2Gi"), nodes)
    # whole "<count> <reason>" strings sort, as Go's sort.Strings does: "1 I" < "1 n" < "10 "
    assert msg == ("0/12 nodes are available: 1 Insufficient memory, 1 node(s) had taint "
                   "{node-role.kubernetes.io/master: }, that the pod didn't tolerate, 10 Insufficient cpu.")


def test_fits_when_resources_allow():
    n = node("w", cpu="8", memory="12268324Ki")
    assert fit.filter_node(pod(), fit.pod_requests(pod()), n) == []
    n.add(fit.pod_requests(pod()))
    assert fit.filter_node(pod(), fit.pod_requests(pod()), n) == []  # 6 cpu, 10Gi of 8 / 11.7Gi
    n.add(fit.pod_requests(pod()))
    assert fit.filter_node(pod(), fit.pod_requests(pod()), n) == ["Insufficient cpu", "Insufficient memory"]


def test_too_many_pods():
    n = node("w", cpu="8", memory="16Gi", pods="1")
    n.add({"cpu": 100})
    assert fit.filter_node(pod(cpu="1", memory="1Gi"), fit.pod_requests(pod(cpu="1", memory="1Gi")), n) == [
        "Too many pods"]


def test_unschedulable_node_and_its_toleration():
    n = node("w", cpu="8", memory="16Gi", unschedulable=True)
    p = pod(cpu="1", memory="1Gi")
    assert fit.filter_node(p, fit.pod_requests(p), n) == ["node(s) were unschedulable"]
    p["spec"]["tolerations"] = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                 "effect": "NoSchedule"}]
    assert fit.filter_node(p, fit.pod_requests(p), n) == []


@pytest.mark.parametrize(("toleration", "ok"), [
    ({"operator": "Exists"}, True),
    ({"key": "node-role.kubernetes.io/master", "operator": "Exists"}, True),
    ({"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoExecute"}, False),
    ({"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": ""}, True),
    ({"key": "node-role.kubernetes.io/master", "value": "x"}, False),
    ({"key": "other", "operator": "Exists"}, False),
])
def test_tolerations(toleration, ok):
    assert fit.tolerates(toleration, MASTER) is ok


def test_prefer_no_schedule_taints_do_not_filter():
    n = node("w", cpu="8", memory="16Gi", taints=[{"key": "soft", "effect": "PreferNoSchedule"}])
    p = pod(cpu="1", memory="1Gi")
    assert fit.filter_node(p, fit.pod_requests(p), n) == []


def test_taint_value_in_message():
    n = node("w", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoExecute"}])
    p = pod(cpu="1", memory="1Gi")
    assert fit.filter_node(p, fit.pod_requests(p), n) == [
        "node(s) had taint {dedicated: gpu}, that the pod didn't tolerate"]


def test_node_selector_and_affinity_messages():
    nodes = [node("a", cpu="8", memory="16Gi", labels={"disk": "ssd"}), node("b", cpu="8", memory="16Gi")]
    p = pod(cpu="1", memory="1Gi", nodeSelector={"disk": "nvme"})
    assert message(p, nodes) == "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity."
    assert message(p, nodes, fit.CURRENT) == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling..")
    p["spec"]["nodeSelector"] = {"disk": "ssd"}
    req = fit.pod_requests(p)
    assert [fit.filter_node(p, req, n) for n in nodes] == [[], ["node(s) didn't match Pod's node affinity"]]


def _affinity(*exprs):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(exprs)}]}}}


@pytest.mark.parametrize(("expr", "labels", "ok"), [
    ({"key": "zone", "operator": "In", "values": ["a", "b"]}, {"zone": "b"}, True),
    ({"key": "zone", "operator": "In", "values": ["a"]}, {"zone": "b"}, False),
    ({"key": "zone", "operator": "NotIn", "values": ["a"]}, {}, True),
    ({"key": "zone", "operator": "NotIn", "values": ["a"]}, {"zone": "a"}, False),
    ({"key": "gpu", "operator": "Exists"}, {"gpu": ""}, True),
    ({"key": "gpu", "operator": "DoesNotExist"}, {"gpu": ""}, False),
    ({"key": "cores", "operator": "Gt", "values": ["8"]}, {"cores": "12"}, True),
    ({"key": "cores", "operator": "Lt", "values": ["8"]}, {"cores": "12"}, False),
    ({"key": "cores", "operator": "Gt", "values": ["8"]}, {"cores": "many"}, False),
])
def test_required_node_affinity_operators(expr, labels, ok):
    n = node("w", cpu="8", memory="16Gi", labels=labels)
    p = pod(cpu="1", memory="1Gi", affinity=_affinity(expr))
    assert (fit.filter_node(p, fit.pod_requests(p), n) == []) is ok


def test_affinity_terms_are_ored_and_empty_term_matches_nothing():
    n = node("w", labels={"zone": "b"})
    terms = [{}, {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]
    assert fit.match_node_selector_terms(terms, n.labels) is True
    assert fit.match_node_selector_terms([{}], n.labels) is False


def test_pod_requests_sum_containers_and_init_max():
    p = {"spec": {"containers": [{"resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}},
                                 {"resources": {"requests": {"cpu": "1", "memory": "512Mi"}}}],
                  "initContainers": [{"resources": {"requests": {"cpu": "2"}}}]}}
    assert fit.pod_requests(p) == {"cpu": 2000, "memory": GI + GI // 2}


def test_no_nodes():
    assert fit.fit_error(0, []) == "no nodes available to schedule pods"


def test_extended_resource_missing_on_node():
    p = {"spec": {"containers": [{"resources": {"requests": {"nvidia.com/gpu": "1"}}}]}}
    assert fit.filter_node(p, fit.pod_requests(p), node("w")) == ["Insufficient nvidia.com/gpu"]
