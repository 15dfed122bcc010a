"""Why a Pending pod has no place in the plan: the first rule, in the scheduler's order and then the
infrastructure's, that leaves it no node — so the reason is the most specific one.

Stages: nodeSelector → required node affinity (the term named) → Ready/cordon and taints (one untolerated taint
named; a cordon is the taint node.kubernetes.io/unschedulable) → anti-affinity with bound pods → size (more than
the largest size any matching node can go to, named) → the hypervisor's free capacity or per-VM maximum (host
named) → the project quota (cores/RAM left) → nodes dropped or pinned by the admin → competition (the other
Pending pods took the room, or their anti-affinity took every domain).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from console.infra.sizes import fmt_mem
from console.planner import constraints as c
from console.planner.model import LIBVIRT, Node, PendingPod, Size
from console.planner.problem import PNode, PPod, Problem, Solution, _alloc, _sig, cheapest_levels, loads
from console.runbook.plan import fmt_cpu


def _term_text(term: Mapping[str, Any]) -> str:
    parts = []
    for r in list(term.get("matchExpressions") or ()) + list(term.get("matchFields") or ()):
        vals = ",".join(str(v) for v in r.get("values") or ())
        parts.append(f"{r.get('key')} {r.get('operator')}{' ' + vals if vals else ''}")
    return " && ".join(parts) or "(empty term)"


def _largest(node: Node) -> tuple[Size, int, int] | None:
    """The node's largest reachable size ignoring hypervisor limits, and the room it gives (cpu, memory)."""
    vm = node.vm
    if vm is None:
        return None
    sizes = [vm.max_size] if vm.method == LIBVIRT and vm.max_size is not None else [o.size for o in vm.options]
    best = None
    for s in sizes:
        a_cpu, a_mem = _alloc(node, s)
        room = (a_cpu - node.requested_cpu_m, a_mem - node.requested_memory)
        if best is None or room > (best[1], best[2]):
            best = (s, *room)
    return best


def _size_text(s: Size) -> str:
    return s.flavor or f"{s.vcpus} vCPU / {fmt_mem(s.memory_mib * 2**20)}"


def reason(prob: Problem, pp: PPod, sol: Solution) -> str:
    """The most specific reason `pp` has no place in `sol`."""
    key = _sig(pp.pod.node_selector, pp.pod.affinity_terms, pp.pod.tolerations, pp.pod.namespace, pp.pod.labels,
               pp.pod.anti_affinity, pp.pod.cpu_m, pp.pod.memory)
    found = prob.memo.get(key)
    if found is None:
        found = prob.memo[key] = _structural(prob, pp)
    if isinstance(found, str):
        return found
    return _competition(prob, pp, pp.pod, found, sol)


def _structural(prob: Problem, pp: PPod) -> str | list[PNode]:
    """The reason no plan at all can place it, or the nodes where it would fit alone."""
    pod = pp.pod
    nodes = [pn.node for pn in prob.nodes]
    if not nodes:
        return "no nodes in the cluster"
    if pod.node_selector:
        left = [n for n in nodes if c.selector_matches(pod.node_selector, n)]
        if not left:
            k, v = min(pod.node_selector.items(), key=lambda kv: sum(n.labels.get(kv[0]) == kv[1] for n in nodes))
            return f"no node matches its nodeSelector {k}={v}"
        nodes = left
    if pod.affinity_terms:
        left = [n for n in nodes if c.affinity_matches(pod.affinity_terms, n)]
        if not left:
            terms = " || ".join(_term_text(t) for t in pod.affinity_terms)
            return f"no node matches its required node affinity ({terms})"
        nodes = left
    return _after_labels(prob, pp, pod, nodes)


def _after_labels(prob: Problem, pp: PPod, pod: PendingPod, nodes: Sequence[Node]) -> str | list[PNode]:
    ready = [n for n in nodes if n.ready]
    if not ready:
        return f"every node matching its selector is NotReady ({_names(nodes)})"
    uncordoned = [n for n in ready if not c.cordon_blocks(pod.tolerations, n)]
    if not uncordoned:
        return f"every node matching its selector is cordoned ({_names(ready)})"
    untolerated = [(n, c.untolerated_taint(pod.tolerations, n)) for n in uncordoned]
    tolerated = [n for n, t in untolerated if t is None]
    if not tolerated:
        taint, k = Counter(c.fmt_taint(t) for _, t in untolerated if t).most_common(1)[0]
        return f"the matching nodes have taints it does not tolerate: {taint} ({k} node(s))"
    static = set(pp.static)
    by_name = {pn.node.name: pn for pn in prob.nodes}
    cand = [by_name[n.name] for n in tolerated if by_name[n.name].i in static]
    if not cand:
        keys = sorted({t.topology_key for t in pod.anti_affinity}) or ["its labels"]
        return ("anti-affinity: every matching node is in a topology domain (" + ", ".join(keys)
                + ") holding a pod it must keep apart from, or whose pods' anti-affinity excludes it")
    return _capacity(prob, pod, cand)


def _names(nodes: Sequence[Node], k: int = 3) -> str:
    names = [n.name for n in nodes]
    return ", ".join(names[:k]) + (f" and {len(names) - k} more" if len(names) > k else "")


def _capacity(prob: Problem, pod: PendingPod, cand: Sequence[PNode]) -> str | list[PNode]:
    need = f"{fmt_cpu(pod.cpu_m)} CPU / {fmt_mem(pod.memory)}"
    full = [pn for pn in cand if pn.room <= 0]
    cand = [pn for pn in cand if pn.room > 0]
    if not cand:
        return f"the matching nodes hold their maximum number of pods ({_names([pn.node for pn in full])})"
    fits_any = []
    roomiest: tuple[int, int, PNode, Size] | None = None
    for pn in cand:
        base_c = pn.cpu_levels[0].cpu if pn.ranged else pn.joint[0].cpu
        base_m = pn.mem_levels[0].mem if pn.ranged else pn.joint[0].mem
        lg = prob.memo.get(("largest", pn.i), False)
        if lg is False:
            lg = prob.memo[("largest", pn.i)] = _largest(pn.node)
        if (base_c >= pod.cpu_m and base_m >= pod.memory) or (lg is not None and lg[1] >= pod.cpu_m
                                                               and lg[2] >= pod.memory):
            fits_any.append(pn)
        elif lg is not None and (roomiest is None or (lg[1], lg[2]) > roomiest[:2]):
            roomiest = (lg[1], lg[2], pn, lg[0])
    if not fits_any:
        best_txt = "" if roomiest is None else (
            f"; the roomiest, {roomiest[2].node.name} at {_size_text(roomiest[3])}, would leave "
            f"{fmt_cpu(max(0, roomiest[0]))} CPU / {fmt_mem(max(0, roomiest[1]))}")
        return f"needs {need}, more than the largest size any matching node can go to{best_txt}"
    # which of those could take it alone, given the hypervisor, the quota and the admin's drops/pins
    reasons: list[str] = []
    for pn in fits_any:
        lv = cheapest_levels(pn, pod.cpu_m, pod.memory)
        if lv is None:
            reasons.append(_limit_text(prob, pn, pod))
            continue
        return list(cand)
    order = ("hypervisor", "project quota", "dropped", "pinned", "the hypervisor allows")
    reasons.sort(key=lambda r: next((i for i, o in enumerate(order) if r.startswith(o)), len(order)))
    return reasons[0]


def _limit_text(prob: Problem, pn: PNode, pod: PendingPod) -> str:
    """Why a node that could reach a size the pod fits was given no such size here."""
    name = pn.node.name
    prefs = prob.inp.prefs
    if name in prefs.dropped:
        return f"dropped: the node it could grow to fit, {name}, is dropped from the plan"
    if name in prefs.pinned:
        return f"pinned: {name} is pinned to {_size_text(prefs.pinned[name])}, which it does not fit"
    hf = prob.hosts.get(pn.host)
    if hf is not None:
        return (f"hypervisor {pn.host} allows at most {hf.max_vcpus if hf.max_vcpus is not None else '?'} vCPUs"
                f" / {hf.max_memory_mib if hf.max_memory_mib is not None else '?'} MiB per VM"
                f" (needs {fmt_cpu(pod.cpu_m)} CPU / {fmt_mem(pod.memory)} on {name})")
    return f"the hypervisor allows no size of {name} that fits it"


def _competition(prob: Problem, pp: PPod, pod: PendingPod, cand: Sequence[PNode], sol: Solution) -> str:
    """Alone it would fit somewhere: what stands in the way on each such node, given the plan — another Pending
    pod's anti-affinity in the node's domain, the hypervisor's or the quota's room left, or the pods already
    planned there."""
    cached = prob.memo.get("loads")
    if cached is None or cached[0] is not sol:
        host_used: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # added vCPUs, MiB; held (Nova)
        used_q = [0, 0]
        for pn in prob.nodes:
            dv, dm = sol.added(pn)
            hu = host_used[pn.host]
            hu[0] += dv
            hu[1] += dm
            if pn.quota and (dv or dm):
                hu[2], hu[3] = max(hu[2], pn.cur_vcpus), max(hu[3], pn.cur_mib)
            if pn.quota:
                used_q[0] += dv
                used_q[1] += dm
        cached = prob.memo["loads"] = (sol, loads(prob, sol.assign), host_used, used_q)
    _, load, host_used, used_q = cached
    q = prob.inp.limits.quota
    cliques = [(members, key) for members, key in prob.conflicts if pp.i in members]
    kinds: list[tuple[str, str]] = []
    for pn in cand:
        mates = [m for members, key in cliques for m in members if m != pp.i and m in sol.assign
                 and prob.domain_of(pn.i, key) is not None
                 and prob.domain_of(sol.assign[m], key) == prob.domain_of(pn.i, key)]
        if mates:
            kinds.append(("anti", prob.pods[mates[0]].pod.key))
            continue
        have = load.get(pn.i, [0, 0, 0])
        if have[2] >= pn.room:
            kinds.append(("room", pn.node.name))
            continue
        lv = cheapest_levels(pn, have[0] + pod.cpu_m, have[1] + pod.memory)
        if lv is None:
            kinds.append(("room", pn.node.name))
            continue
        dv, dm = Solution({}, {pn.i: lv[0]}, {pn.i: lv[1]}, {pn.i: lv[2]}).added(pn)
        own_v, own_m = sol.added(pn)
        more_v, more_m = max(0, dv - own_v), max(0, dm - own_m)
        hf = prob.hosts.get(pn.host)
        hu = host_used[pn.host]
        # problem.py's hold rule: a Nova resize in place needs its new size free while the old one is held
        hold_v = max(hu[2], pn.cur_vcpus) if pn.quota else hu[2]
        hold_m = max(hu[3], pn.cur_mib) if pn.quota else hu[3]
        left_v = None if hf is None or hf.vcpus is None else hf.vcpus - hu[0] - hold_v
        left_m = None if hf is None or hf.memory_mib is None else hf.memory_mib - hu[1] - hold_m
        if (left_v is not None and more_v > left_v) or (left_m is not None and more_m > left_m):
            kinds.append(("hypervisor", f"hypervisor {pn.host} has only {_q(left_v)} vCPUs / {_q(left_m)} MiB free "
                                        f"(growing {pn.node.name} to fit it needs +{more_v} vCPUs / +{more_m} MiB)"))
            continue
        qv = None if q.cores is None else q.cores - used_q[0]
        qm = None if q.ram_mib is None else q.ram_mib - used_q[1]
        if pn.quota and ((qv is not None and more_v > qv) or (qm is not None and more_m > qm)):
            kinds.append(("quota", f"project quota: {_q(qv)} cores / {_q(qm)} MiB RAM left (growing "
                                   f"{pn.node.name} to fit it needs +{more_v} vCPUs / +{more_m} MiB)"))
            continue
        kinds.append(("room", pn.node.name))  # it would fit, but then another pod would not: the others won
    if kinds and all(k == "anti" for k, _ in kinds):
        return ("anti-affinity: Pending pods it must keep apart from took every topology domain it could use ("
                + ", ".join(sorted({t for _, t in kinds})[:3]) + ")")
    for kind in ("hypervisor", "quota"):
        if kinds and all(k in ("hypervisor", "quota", "anti") for k, _ in kinds):
            texts = [t for k, t in kinds if k == kind]
            if texts:
                return texts[0]
    return "the other pods took the room: the nodes it fits hold other Pending pods of this plan"


def _q(v: int | None) -> str:
    return "unlimited" if v is None else str(max(0, v))


def unplaceable(prob: Problem, sol: Solution) -> list[tuple[str, str]]:
    return [(pp.pod.key, reason(prob, pp, sol)) for pp in prob.pods if pp.i not in sol.assign]
