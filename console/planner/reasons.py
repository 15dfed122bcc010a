"""Why a Pending pod has no place in the plan: the first rule, in the scheduler's order and then the
infrastructure's, that leaves it no node — so the reason is the most specific one.

Stages: nodeSelector → required node affinity (the term named) → Ready/cordon and taints (one untolerated taint
named; a cordon is the taint node.kubernetes.io/unschedulable) → anti-affinity with bound pods → size (more than
the largest size any matching node can go to, named) → the hypervisor's free capacity or per-VM maximum (host
named) → the project quota (cores/RAM left) → nodes dropped or pinned by the admin → competition (the other
Pending pods took the room, or their anti-affinity took every domain).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from console.infra.sizes import fmt_mem
from console.planner import constraints as c
from console.planner.model import LIBVIRT, Node, PendingPod, Size
from console.planner.problem import PNode, PPod, Problem, Solution, _alloc, cheapest_levels
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
    return _after_labels(prob, pp, pod, nodes, sol)


def _after_labels(prob: Problem, pp: PPod, pod: PendingPod, nodes: Sequence[Node], sol: Solution) -> str:
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
    return _capacity(prob, pp, pod, cand, sol)


def _names(nodes: Sequence[Node], k: int = 3) -> str:
    names = [n.name for n in nodes]
    return ", ".join(names[:k]) + (f" and {len(names) - k} more" if len(names) > k else "")


def _capacity(prob: Problem, pp: PPod, pod: PendingPod, cand: Sequence[PNode], sol: Solution) -> str:
    need = f"{fmt_cpu(pod.cpu_m)} CPU / {fmt_mem(pod.memory)}"
    full = [pn for pn in cand if pn.room <= 0]
    cand = [pn for pn in cand if pn.room > 0]
    if not cand:
        return f"the matching nodes hold their maximum number of pods ({_names([pn.node for pn in full])})"
    fits_any = []
    best_txt = ""
    for pn in cand:
        cur_fit = pn.joint[0].cpu >= pod.cpu_m and pn.joint[0].mem >= pod.memory if pn.joint and not pn.ranged else (
            pn.cpu_levels[0].cpu >= pod.cpu_m and pn.mem_levels[0].mem >= pod.memory if pn.ranged else False)
        lg = _largest(pn.node)
        if cur_fit or (lg is not None and lg[1] >= pod.cpu_m and lg[2] >= pod.memory):
            fits_any.append(pn)
        elif lg is not None and not best_txt:
            best_txt = (f"; {pn.node.name} at its largest ({_size_text(lg[0])}) leaves {fmt_cpu(max(0, lg[1]))} CPU"
                        f" / {fmt_mem(max(0, lg[2]))}")
    if not fits_any:
        return f"needs {need}, more than the largest size any matching node can go to{best_txt}"
    # which of those could take it alone, given the hypervisor, the quota and the admin's drops/pins
    reasons: list[str] = []
    for pn in fits_any:
        lv = cheapest_levels(pn, pod.cpu_m, pod.memory)
        if lv is None:
            reasons.append(_limit_text(prob, pn, pod))
            continue
        return _competition(prob, pp, pod, cand, sol)
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
    # alone it fits somewhere: the hypervisors, the quota or the other pods stand in the way
    host_used: dict[str, list[int]] = {}
    used_q = [0, 0]
    for pn in prob.nodes:
        dv, dm = sol.added(pn)
        if pn.host:
            hu = host_used.setdefault(pn.host, [0, 0])
            hu[0] += dv
            hu[1] += dm
        if pn.quota:
            used_q[0] += dv
            used_q[1] += dm
    q = prob.inp.limits.quota
    blockers: list[str] = []
    for pn in cand:
        lv = cheapest_levels(pn, pod.cpu_m, pod.memory)
        if lv is None:
            continue
        probe = Solution({}, {pn.i: lv[0]}, {pn.i: lv[1]}, {pn.i: lv[2]})
        dv, dm = probe.added(pn)
        own_v, own_m = sol.added(pn)
        hf = prob.hosts.get(pn.host)
        hu = host_used.get(pn.host, [0, 0])
        free_v = None if hf is None or hf.vcpus is None else hf.vcpus - hu[0] + own_v
        free_m = None if hf is None or hf.memory_mib is None else hf.memory_mib - hu[1] + own_m
        if (free_v is not None and dv > free_v) or (free_m is not None and dm > free_m):
            blockers.append(f"hypervisor {pn.host} has only {_q(free_v)} vCPUs / {_q(free_m)} MiB free (growing "
                            f"{pn.node.name} to fit it needs +{dv} vCPUs / +{dm} MiB)")
            continue
        left_v = None if q.cores is None else q.cores - used_q[0] + (own_v if pn.quota else 0)
        left_m = None if q.ram_mib is None else q.ram_mib - used_q[1] + (own_m if pn.quota else 0)
        if pn.quota and ((left_v is not None and dv > left_v) or (left_m is not None and dm > left_m)):
            blockers.append(f"project quota: {_q(left_v)} cores / {_q(left_m)} MiB RAM left (growing "
                            f"{pn.node.name} to fit it needs +{dv} vCPUs / +{dm} MiB)")
            continue
        blockers.append("")
    if blockers and all(blockers):
        hyp = [b for b in blockers if b.startswith("hypervisor")]
        return hyp[0] if hyp else blockers[0]
    mates = [m for members, _ in prob.conflicts if pp.i in members for m in members if m != pp.i and m in sol.assign]
    if mates:
        return ("anti-affinity: Pending pods it must keep apart from took the domains it could use ("
                + ", ".join(sorted(prob.pods[m].pod.key for m in mates)[:3]) + ")")
    if host_used or used_q != [0, 0]:
        return "the other pods took the room: what the hypervisors and quota leave went to pods placed first"
    return "the other pods took the room on the nodes it fits"


def _q(v: int | None) -> str:
    return "unlimited" if v is None else str(max(0, v))


def unplaceable(prob: Problem, sol: Solution) -> list[tuple[str, str]]:
    return [(pp.pod.key, reason(prob, pp, sol)) for pp in prob.pods if pp.i not in sol.assign]
