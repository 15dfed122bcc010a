"""The fast planner for large instances: greedy placement over indexed arrays, then improvement.

Pods are taken hardest first (fewest nodes admit them, then largest); each goes where it costs least now: a node
whose current (or already chosen) size holds it costs 0, else the cheapest size of an admitting node that holds
the node's load plus it, within its hypervisor's and the quota's remaining room; ties go to the preferences (no
PDB-blocked node, a live scale-up), then to the tightest fit. Per pod the candidate nodes are evaluated as numpy
arrays (the pods sharing a constraint signature share one index of their nodes), so 1,000 pods × 5,000 nodes
plan in well under a second. Improvement: several pod orders, then for each grown node an attempt to undo its
growth and re-place its pods elsewhere; the best plan (most pods, then least cost) wins.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from console.planner.bounds import lower_bound
from console.planner.problem import Problem, Solution, cheapest_levels, loads, violations

BIG = 1e18


@dataclass
class _Arrays:
    """Per node, the sizes as padded arrays: joint sizes for flavors, separate dimensions for libvirt ranges."""

    # joint (N × L): room cpu, room mem (bytes, float), cost, added vCPUs, added MiB; padded with -1 room
    jc: np.ndarray
    jm: np.ndarray
    jcost: np.ndarray
    jdv: np.ndarray
    jdm: np.ndarray
    # ranged (N × K) cpu, (N × M) mem
    rc: np.ndarray
    rccost: np.ndarray
    rcdv: np.ndarray
    rm: np.ndarray
    rmcost: np.ndarray
    rmdm: np.ndarray
    ranged: np.ndarray  # bool (N)
    room: np.ndarray  # pods admitted (N)
    host: np.ndarray  # host index (N), -1: none
    quota: np.ndarray  # bool (N): a growth is a Nova resize (quota; holds its current size while it runs)
    pref: np.ndarray  # preference penalty of growing (N)
    curv: np.ndarray  # current vCPUs / MiB (N): what a Nova resize in place holds (problem.py's hold rule)
    curm: np.ndarray


def _arrays(prob: Problem) -> _Arrays:
    nn = len(prob.nodes)
    lj = max([len(pn.joint) for pn in prob.nodes] + [1])
    lk = max([len(pn.cpu_levels) for pn in prob.nodes] + [1])
    lm = max([len(pn.mem_levels) for pn in prob.nodes] + [1])

    def pad(rows: int, cols: int, fill: float) -> np.ndarray:
        return np.full((rows, cols), fill, dtype=float)

    jc, jm, jcost, jdv, jdm = pad(nn, lj, -1), pad(nn, lj, -1), pad(nn, lj, BIG), pad(nn, lj, 0), pad(nn, lj, 0)
    rc, rccost, rcdv = pad(nn, lk, -1), pad(nn, lk, BIG), pad(nn, lk, 0)
    rm, rmcost, rmdm = pad(nn, lm, -1), pad(nn, lm, BIG), pad(nn, lm, 0)
    hosts = {h: i for i, h in enumerate(sorted({pn.host for pn in prob.nodes if pn.host}))}
    prefs = prob.inp.prefs
    pref = np.zeros(nn)
    for pn in prob.nodes:
        i = pn.i
        for k, lv in enumerate(pn.joint):
            jc[i, k], jm[i, k], jcost[i, k], jdv[i, k], jdm[i, k] = lv.cpu, lv.mem, lv.cost, lv.add_vcpus, lv.add_mib
        for k, lv in enumerate(pn.cpu_levels):
            rc[i, k], rccost[i, k], rcdv[i, k] = lv.cpu, lv.cost, lv.add_vcpus
        for k, lv in enumerate(pn.mem_levels):
            rm[i, k], rmcost[i, k], rmdm[i, k] = lv.mem, lv.cost, lv.add_mib
        pref[i] = (2.0 if pn.pdb and prefs.avoid_pdb_blocked else 0.0) + (
            1.0 if prefs.prefer_live and pn.method != "libvirt" else 0.0)
    return _Arrays(jc, jm, jcost, jdv, jdm, rc, rccost, rcdv, rm, rmcost, rmdm,
                   np.array([pn.ranged for pn in prob.nodes], dtype=bool),
                   np.array([pn.room for pn in prob.nodes], dtype=float),
                   np.array([hosts.get(pn.host, -1) for pn in prob.nodes], dtype=int),
                   np.array([pn.quota for pn in prob.nodes], dtype=bool), pref,
                   np.array([pn.cur_vcpus for pn in prob.nodes], dtype=float),
                   np.array([pn.cur_mib for pn in prob.nodes], dtype=float))


class _State:
    def __init__(self, prob: Problem, ar: _Arrays) -> None:
        nn = len(prob.nodes)
        self.prob, self.ar = prob, ar
        self.lc = np.zeros(nn)  # load placed: cpu, mem, count
        self.lm = np.zeros(nn)
        self.ln = np.zeros(nn)
        self.jl = np.zeros(nn, dtype=int)  # chosen levels
        self.kl = np.zeros(nn, dtype=int)
        self.ml = np.zeros(nn, dtype=int)
        hosts = sorted({pn.host for pn in prob.nodes if pn.host})
        self.hv = np.array([_lim(prob.hosts.get(h), "vcpus") for h in hosts] + [BIG])  # left; index -1 = none
        self.hm = np.array([_lim(prob.hosts.get(h), "memory_mib") for h in hosts] + [BIG])
        q = prob.inp.limits.quota
        self.qv = BIG if q.cores is None else float(q.cores)
        self.qm = BIG if q.ram_mib is None else float(q.ram_mib)
        rows = np.arange(nn)
        # what the base sizes (pins) already take
        dv0 = np.where(ar.ranged, 0.0, ar.jdv[rows, 0])
        dm0 = np.where(ar.ranged, 0.0, ar.jdm[rows, 0])
        np.subtract.at(self.hv, ar.host, dv0)
        np.subtract.at(self.hm, ar.host, dm0)
        # the largest current size among the Nova resizes per host (pins first)
        self.hhv = np.zeros(len(self.hv))
        self.hhm = np.zeros(len(self.hm))
        pinned = ar.quota & ((dv0 > 0) | (dm0 > 0))
        np.maximum.at(self.hhv, ar.host[pinned], ar.curv[pinned])
        np.maximum.at(self.hhm, ar.host[pinned], ar.curm[pinned])
        self.hhv[-1] = self.hhm[-1] = 0.0
        self.qv -= float(dv0[ar.quota].sum())
        self.qm -= float(dm0[ar.quota].sum())
        # room left at the chosen size (the base size at first)
        self.fc = np.where(ar.ranged, ar.rc[rows, 0], ar.jc[rows, 0])
        self.fm = np.where(ar.ranged, ar.rm[rows, 0], ar.jm[rows, 0])
        self.assign: dict[int, int] = {}
        self.blocked: dict[tuple[int, str], np.ndarray] = {}  # (clique, key) → nodes whose domain is taken

    def adopt(self, sol: Solution, keep: set[int], domains: dict[str, dict[str, np.ndarray]],
              pod_cliques: dict[int, list[tuple[int, str]]]) -> None:
        """Start from `sol` on the nodes in `keep`: their sizes and the pods on them."""
        for n in sorted(keep):
            pn = self.prob.nodes[n]
            if sol.grown(pn) or (not pn.ranged and sol.joint.get(n, 0)):
                self.preset(n, sol.joint.get(n, 0), sol.cpu.get(n, 0), sol.mem.get(n, 0))
        for j, n in sol.assign.items():
            if n in keep:
                pod = self.prob.pods[j].pod
                self._put(j, n, pod.cpu_m, pod.memory, pod_cliques.get(j, []), domains)

    def preset(self, node: int, j: int, k: int, m: int) -> bool:
        """Start `node` at the given levels; False when that alone breaks its hypervisor's or the quota's room."""
        ar = self.ar
        if ar.ranged[node]:
            dv, dm = ar.rcdv[node, k], ar.rmdm[node, m]
            fc, fm = ar.rc[node, k], ar.rm[node, m]
        else:
            dv, dm = ar.jdv[node, j] - ar.jdv[node, 0], ar.jdm[node, j] - ar.jdm[node, 0]
            fc, fm = ar.jc[node, j], ar.jm[node, j]
        h = ar.host[node]
        grows = dv > 0 or dm > 0
        hold_v = max(self.hhv[h], ar.curv[node]) if ar.quota[node] and grows else self.hhv[h]
        hold_m = max(self.hhm[h], ar.curm[node]) if ar.quota[node] and grows else self.hhm[h]
        if grows and (dv > self.hv[h] - hold_v or dm > self.hm[h] - hold_m
                      or (ar.quota[node] and (dv > self.qv or dm > self.qm))):
            return False
        self.hhv[h], self.hhm[h] = hold_v, hold_m
        self.hv[h] -= dv
        self.hm[h] -= dm
        if ar.quota[node]:
            self.qv -= dv
            self.qm -= dm
        self.jl[node], self.kl[node], self.ml[node] = j, k, m
        self.fc[node], self.fm[node] = fc, fm
        return True

    def place(self, j: int, idx: np.ndarray, domains: dict[str, dict[str, np.ndarray]],
              cliques: list[tuple[int, str]]) -> bool:
        ar, pod = self.ar, self.prob.pods[j].pod
        if cliques:
            ok = np.ones(len(idx), dtype=bool)
            for cid, key in cliques:
                b = self.blocked.get((cid, key))
                if b is not None:
                    ok &= ~b[idx]
            idx = idx[ok]
        idx = idx[self.ln[idx] < ar.room[idx]]
        if not len(idx):
            return False
        # fast path: nodes whose chosen size already holds it cost nothing; the tightest fit wins
        now = idx[(self.fc[idx] >= pod.cpu_m) & (self.fm[idx] >= pod.memory)]
        if len(now):
            left = (self.fc[now] - pod.cpu_m) / 1000.0 + (self.fm[now] - pod.memory) / 2**30
            node = int(now[np.argmin(left)])
            self._put(j, node, pod.cpu_m, pod.memory, cliques, domains)
            return True
        need_c = self.lc[idx] + pod.cpu_m
        need_m = self.lm[idx] + pod.memory
        n = len(idx)
        delta = np.full(n, BIG)
        dv = np.zeros(n)
        dm = np.zeros(n)
        new_j = self.jl[idx].copy()
        new_k = self.kl[idx].copy()
        new_m = self.ml[idx].copy()
        rg = ar.ranged[idx]
        if (~rg).any():
            sub = idx[~rg]
            cur = self.jl[sub]
            fit = (ar.jc[sub] >= need_c[~rg, None]) & (ar.jm[sub] >= need_m[~rg, None])
            # only sizes the hypervisor's and the quota's remaining room allow
            h = ar.host[sub]
            adv = ar.jdv[sub] - ar.jdv[sub, cur][:, None]
            adm = ar.jdm[sub] - ar.jdm[sub, cur][:, None]
            nova = ar.quota[sub]
            host_v = self.hv[h] - np.where(nova, np.maximum(self.hhv[h], ar.curv[sub]), self.hhv[h])
            host_m = self.hm[h] - np.where(nova, np.maximum(self.hhm[h], ar.curm[sub]), self.hhm[h])
            lim_v = np.where(nova, np.minimum(host_v, self.qv), host_v)[:, None]
            lim_m = np.where(nova, np.minimum(host_m, self.qm), host_m)[:, None]
            same = np.arange(ar.jc.shape[1])[None, :] == cur[:, None]  # staying at the chosen size needs nothing
            fit &= ((adv <= lim_v + 1e-9) & (adm <= lim_m + 1e-9)) | same
            cost = np.where(fit, ar.jcost[sub], BIG)
            best = np.argmin(cost, axis=1)
            rows = np.arange(len(sub))
            cur_cost = ar.jcost[sub, cur]
            keep = fit[rows, cur]  # the chosen size still holds it: no change
            best = np.where(keep, cur, best)
            delta[~rg] = np.where(fit[rows, best], cost[rows, best] - cur_cost, BIG)
            dv[~rg] = ar.jdv[sub, best] - ar.jdv[sub, cur]
            dm[~rg] = ar.jdm[sub, best] - ar.jdm[sub, cur]
            new_j[~rg] = best
        if rg.any():
            sub = idx[rg]
            ck, cm = self.kl[sub], self.ml[sub]
            h = ar.host[sub]
            lim_v = (self.hv[h] - self.hhv[h])[:, None]  # a live scale-up holds nothing extra
            lim_m = (self.hm[h] - self.hhm[h])[:, None]
            fk = (ar.rc[sub] >= need_c[rg, None]) & (ar.rcdv[sub] - ar.rcdv[sub, ck][:, None] <= lim_v + 1e-9)
            fm = (ar.rm[sub] >= need_m[rg, None]) & (ar.rmdm[sub] - ar.rmdm[sub, cm][:, None] <= lim_m + 1e-9)
            bk = np.maximum(np.argmax(fk, axis=1), ck)  # levels rise with the index: the first that holds
            bm = np.maximum(np.argmax(fm, axis=1), cm)
            rows = np.arange(len(sub))
            okr = fk.any(axis=1) & fm.any(axis=1)
            d = (ar.rccost[sub, bk] - ar.rccost[sub, ck]) + (ar.rmcost[sub, bm] - ar.rmcost[sub, cm])
            delta[rg] = np.where(okr, d, BIG)
            dv[rg] = ar.rcdv[sub, bk] - ar.rcdv[sub, ck]
            dm[rg] = ar.rmdm[sub, bm] - ar.rmdm[sub, cm]
            new_k[rg] = bk
            new_m[rg] = bm
            del rows
        h = ar.host[idx]
        qn = ar.quota[idx]
        grows_now = (dv > 0) | (dm > 0)
        hold_v = np.where(qn & grows_now, np.maximum(self.hhv[h], ar.curv[idx]), self.hhv[h])
        hold_m = np.where(qn & grows_now, np.maximum(self.hhm[h], ar.curm[idx]), self.hhm[h])
        ok = ~grows_now | ((dv <= self.hv[h] - hold_v + 1e-9) & (dm <= self.hm[h] - hold_m + 1e-9))
        ok &= ~qn | ((dv <= self.qv + 1e-9) & (dm <= self.qm + 1e-9))
        delta = np.where(ok, delta, BIG)
        best_delta = delta.min()
        if best_delta >= BIG / 2:
            return False
        grows = (dv > 0) | (dm > 0)
        # ties: equal cost, then no growth / the preferences, then the tightest fit (least CPU left)
        cand = np.flatnonzero(delta <= best_delta + 1e-9 * max(1.0, abs(best_delta)))
        pen = np.where(grows[cand], 1.0 + ar.pref[idx[cand]], 0.0)
        left = self._room_after(idx[cand], new_j[cand], new_k[cand], new_m[cand]) - need_c[cand]
        order = np.lexsort((left, pen))
        pick = cand[order[0]]
        node = int(idx[pick])
        self.jl[node], self.kl[node], self.ml[node] = new_j[pick], new_k[pick], new_m[pick]
        self.hv[ar.host[node]] -= dv[pick]
        self.hm[ar.host[node]] -= dm[pick]
        self.hhv[ar.host[node]] = hold_v[pick]
        self.hhm[ar.host[node]] = hold_m[pick]
        if ar.quota[node]:
            self.qv -= dv[pick]
            self.qm -= dm[pick]
        self._put(j, node, pod.cpu_m, pod.memory, cliques, domains)
        return True

    def _put(self, j: int, node: int, cpu: int, mem: int, cliques: list[tuple[int, str]],
             domains: dict[str, dict[str, np.ndarray]]) -> None:
        ar = self.ar
        self.lc[node] += cpu
        self.lm[node] += mem
        self.ln[node] += 1
        if ar.ranged[node]:
            self.fc[node] = ar.rc[node, self.kl[node]] - self.lc[node]
            self.fm[node] = ar.rm[node, self.ml[node]] - self.lm[node]
        else:
            self.fc[node] = ar.jc[node, self.jl[node]] - self.lc[node]
            self.fm[node] = ar.jm[node, self.jl[node]] - self.lm[node]
        self.assign[j] = node
        for cid, key in cliques:
            v = self.prob.domain_of(node, key)
            if v is not None:
                b = self.blocked.get((cid, key))
                if b is None:
                    b = self.blocked[cid, key] = np.zeros(len(self.prob.nodes), dtype=bool)
                b[domains[key][v]] = True

    def _room_after(self, idx: np.ndarray, j: np.ndarray, k: np.ndarray, m: np.ndarray) -> np.ndarray:
        ar = self.ar
        return np.where(ar.ranged[idx], ar.rc[idx, k], ar.jc[idx, j])

    def solution(self) -> Solution:
        sol = Solution(dict(self.assign))
        for pn in self.prob.nodes:
            i = pn.i
            if pn.ranged:
                if self.kl[i]:
                    sol.cpu[i] = int(self.kl[i])
                if self.ml[i]:
                    sol.mem[i] = int(self.ml[i])
            elif self.jl[i]:
                sol.joint[i] = int(self.jl[i])
        return sol


def _lim(hf: object, attr: str) -> float:
    v = getattr(hf, attr, None) if hf is not None else None
    return BIG if v is None else float(v)


def _domains(prob: Problem) -> dict[str, dict[str, np.ndarray]]:
    out: dict[str, dict[str, np.ndarray]] = {}
    for key in {k for _, k in prob.conflicts}:
        groups: dict[str, list[int]] = defaultdict(list)
        for pn in prob.nodes:
            v = pn.node.labels.get(key)
            if v is not None:
                groups[v].append(pn.i)
        out[key] = {v: np.array(ix, dtype=int) for v, ix in groups.items()}
    return out


def _greedy(prob: Problem, ar: _Arrays, order: list[int], domains: dict[str, dict[str, np.ndarray]],
            pod_cliques: dict[int, list[tuple[int, str]]], idx_of: list[np.ndarray],
            skip_growth: frozenset[int] = frozenset(), preset: tuple[int, int, int, int] | None = None
            ) -> Solution | None:
    """One greedy pass in `order`; `skip_growth`: nodes kept at their base size; `preset`: (node, joint, cpu,
    mem) levels one node starts at (None when that size alone breaks a hypervisor or quota limit)."""
    st = _State(prob, ar)
    if preset is not None and not st.preset(*preset):
        return None
    saved = None
    if skip_growth:
        saved = (ar.jc.copy(), ar.rc.copy(), ar.rm.copy())
        for n in skip_growth:
            ar.jc[n, 1:] = -1
            ar.rc[n, 1:] = -1
            ar.rm[n, 1:] = -1
    try:
        for j in order:
            st.place(j, idx_of[j], domains, pod_cliques.get(j, []))
    finally:
        if saved is not None:
            ar.jc, ar.rc, ar.rm = saved
    return _tighten(prob, st.solution())


def _recreate(prob: Problem, ar: _Arrays, best: Solution, ruin: set[int], order: list[int],
              domains: dict[str, dict[str, np.ndarray]], pod_cliques: dict[int, list[tuple[int, str]]],
              idx_of: list[np.ndarray], presets: tuple[tuple[int, int, int, int], ...] = ()) -> Solution:
    """Large-neighbourhood step: keep `best` except on the `ruin` nodes (back to their base size, or some of them
    at a `presets` size), then place every pod not kept in `order`."""
    st = _State(prob, ar)
    st.adopt(best, {pn.i for pn in prob.nodes} - ruin, domains, pod_cliques)
    for pre in presets:
        if not st.preset(*pre):
            return Solution({})
    for j in order:
        if j not in st.assign:
            st.place(j, idx_of[j], domains, pod_cliques.get(j, []))
    return _tighten(prob, st.solution())


def _tighten(prob: Problem, sol: Solution) -> Solution:
    """Each grown node down to the cheapest size that still holds what landed on it (a preset may be larger)."""
    out = Solution(dict(sol.assign), dict(sol.joint), dict(sol.cpu), dict(sol.mem))
    changed = False
    for n, (cpu, mem, _) in loads(prob, sol.assign).items():
        pn = prob.nodes[n]
        lv = cheapest_levels(pn, cpu, mem)
        if lv is None:
            continue
        trial = Solution({}, {n: lv[0]}, {n: lv[1]}, {n: lv[2]})
        if trial.node_cost(pn) < sol.node_cost(pn) - 1e-12:
            out.joint[n], out.cpu[n], out.mem[n] = lv
            changed = True
    used = {n for n in sol.assign.values()}
    for pn in prob.nodes:  # a grown node nothing landed on goes back to its base size
        if pn.i not in used and sol.grown(pn):
            out.joint.pop(pn.i, None)
            out.cpu.pop(pn.i, None)
            out.mem.pop(pn.i, None)
            changed = True
    if changed and violations(prob, out):
        return sol
    return out


def _repack(prob: Problem, sizes: Solution, pods: list[int], budget: int = 4000) -> Solution | None:
    """Exchange move at fixed sizes: place all of `pods` on the nodes at the sizes `sizes` chose, by a
    depth-first search over pod → node (at most `budget` steps); None when it finds no packing.

    Greedy placement puts each pod in the tightest fit it sees and never moves one already placed, so a tight
    two-resource packing (a set of sizes that would hold every pod, but only with the pods arranged just so)
    makes it grow one node more; this search re-arranges them. Only for small instances (see `solve`).
    """
    free_c = {pn.i: sizes.room(pn)[0] for pn in prob.nodes}
    free_m = {pn.i: sizes.room(pn)[1] for pn in prob.nodes}
    free_n = {pn.i: pn.room for pn in prob.nodes}
    clq: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for cid, (members, key) in enumerate(prob.conflicts):
        for j in members:
            clq[j].append((cid, key))
    taken: dict[tuple[int, str, str], int] = defaultdict(int)  # (clique, key, domain) → pods there
    # most constrained first: fewest nodes, then the larger share of the room on offer
    tot_c = max(1.0, float(sum(max(0, v) for v in free_c.values())))
    tot_m = max(1.0, float(sum(max(0, v) for v in free_m.values())))
    order = sorted(pods, key=lambda j: (len(prob.pods[j].eligible), -max(prob.pods[j].pod.cpu_m / tot_c,
                                                                          prob.pods[j].pod.memory / tot_m)))
    # two nodes with the same room left, admitting the same pods, in no anti-affinity domain apart, are
    # interchangeable: after one failed the other would too
    admit: dict[int, list[int]] = defaultdict(list)
    for j in pods:
        for n in prob.pods[j].eligible:
            admit[n].append(j)
    keys = sorted({key for _, key in prob.conflicts})
    sig = {pn.i: (tuple(admit[pn.i]), tuple(prob.domain_of(pn.i, k) for k in keys)) for pn in prob.nodes}
    assign: dict[int, int] = {}
    steps = 0

    def fits(j: int, n: int) -> bool:
        pod = prob.pods[j].pod
        if free_n[n] < 1 or free_c[n] < pod.cpu_m or free_m[n] < pod.memory:
            return False
        return all(taken[cid, key, d] == 0 for cid, key in clq[j]
                   if (d := prob.domain_of(n, key)) is not None)

    def mark(j: int, n: int, sign: int) -> None:
        pod = prob.pods[j].pod
        free_n[n] -= sign
        free_c[n] -= sign * pod.cpu_m
        free_m[n] -= sign * pod.memory
        for cid, key in clq[j]:
            d = prob.domain_of(n, key)
            if d is not None:
                taken[cid, key, d] += sign

    def dfs(t: int) -> bool:
        nonlocal steps
        if t == len(order):
            return True
        j = order[t]
        seen: set[tuple[object, ...]] = set()
        for n in prob.pods[j].eligible:
            steps += 1
            if steps > budget:
                return False
            state = (free_c[n], free_m[n], free_n[n], sig[n])
            if state in seen or not fits(j, n):
                continue
            seen.add(state)
            mark(j, n, 1)
            assign[j] = n
            if dfs(t + 1):
                return True
            del assign[j]
            mark(j, n, -1)
        return False

    if not dfs(0):
        return None
    out = Solution(assign, dict(sizes.joint), dict(sizes.cpu), dict(sizes.mem))
    return None if violations(prob, out) else _tighten(prob, out)


def _sizes(prob: Problem, presets: tuple[tuple[int, int, int, int], ...]) -> Solution:
    sol = Solution({})
    for n, j, k, m in presets:
        if prob.nodes[n].ranged:
            sol.cpu[n], sol.mem[n] = k, m
        else:
            sol.joint[n] = j
    return sol


def _key(prob: Problem, sol: Solution) -> tuple[int, float]:
    return (len(sol.assign), -round(sol.cost(prob), 9))


def _presets(prob: Problem) -> list[tuple[int, int, int, int]]:
    """Growths to try first: every flavor of each node, the top and middle of each libvirt range."""
    out = []
    for pn in prob.nodes:
        if pn.ranged:
            k, m = len(pn.cpu_levels) - 1, len(pn.mem_levels) - 1
            out += sorted({(pn.i, 0, k, m), (pn.i, 0, (k + 1) // 2, (m + 1) // 2), (pn.i, 0, k, 0), (pn.i, 0, 0, m)})
        else:
            out += [(pn.i, lv, 0, 0) for lv in range(1, len(pn.joint))]
    return out


def solve(prob: Problem, time_limit: float = 2.0, max_rounds: int = 1000) -> Solution:
    """The best plan found within `time_limit` seconds (80 % of it; a proven optimum stops earlier)."""
    t0 = time.monotonic()
    if not prob.pods:
        return Solution({})
    ar = _arrays(prob)
    domains = _domains(prob)
    pod_cliques: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for cid, (members, key) in enumerate(prob.conflicts):
        for j in members:
            pod_cliques[j].append((cid, key))
    shared: dict[int, np.ndarray] = {}  # pods with the same admitting nodes share one index array
    idx_of = [shared.setdefault(id(pp.eligible), np.array(pp.eligible, dtype=int)) for pp in prob.pods]
    pods = prob.pods
    hardest = sorted(range(len(pods)), key=lambda j: (len(pods[j].eligible), -pods[j].pod.cpu_m,
                                                      -pods[j].pod.memory, j))
    orders = [
        hardest,
        sorted(range(len(pods)), key=lambda j: (-pods[j].pod.cpu_m, -pods[j].pod.memory, j)),
        sorted(range(len(pods)), key=lambda j: (-pods[j].pod.memory, -pods[j].pod.cpu_m, j)),
        sorted(range(len(pods)), key=lambda j: (-len(pod_cliques.get(j, ())), len(pods[j].eligible), j)),
    ]
    first_sol = _greedy(prob, ar, hardest, domains, pod_cliques, idx_of)
    assert first_sol is not None
    best = first_sol
    one = time.monotonic() - t0
    deadline = t0 + time_limit * 0.8

    def proven(sol: Solution) -> bool:  # no plan is cheaper: stop improving
        lb = lower_bound(prob, sol)
        return lb is not None and sol.cost(prob) <= lb + 1e-9 * max(1.0, lb)

    presets = _presets(prob)

    def repairs() -> Iterator[Solution | None]:
        """Per unplaced pod: grow one admitting node to a size that holds it, freeing the hypervisor's and the
        quota's room the plan's other growths there took, and place that pod first."""
        for pp in [pp for pp in prob.pods if pp.i not in best.assign and pp.eligible][:20]:
            first = [pp.i] + [j for j in hardest if j != pp.i]
            for n in pp.eligible[:12]:
                pn = prob.nodes[n]
                ruin = {n} | {o.i for o in prob.nodes
                              if best.grown(o) and (o.host == pn.host or (pn.quota and o.quota))}
                for pre in (p for p in presets if p[0] == n):
                    yield _recreate(prob, ar, best, ruin, first, domains, pod_cliques, idx_of, (pre,))

    def tries() -> Iterator[Solution | None]:
        for order in orders[1:]:
            yield _greedy(prob, ar, order, domains, pod_cliques, idx_of)
        for pre in presets:  # grow one node first, then place everything
            for order in (hardest, orders[2]):
                yield _greedy(prob, ar, order, domains, pod_cliques, idx_of, preset=pre)
        if len(presets) <= 40:  # small instances: two nodes grown first, pods by difficulty or by memory
            for a_i, a in enumerate(presets):
                for b in presets[a_i + 1:]:
                    if a[0] != b[0]:
                        got = []
                        for order in (hardest, orders[2]):
                            got.append(_recreate(prob, ar, Solution({}), set(), order, domains, pod_cliques,
                                                 idx_of, (a, b)))
                            yield got[-1]
                        # greedy packing grew a third node (or left a pod out): re-arrange at these two sizes
                        sizes = _sizes(prob, (a, b))
                        most = max(got, key=lambda s: _key(prob, s))
                        if most.assign and _key(prob, most) < (len(most.assign), -sizes.cost(prob)):
                            yield _repack(prob, sizes, sorted(most.assign))
        yield from repairs()
        for pn in sorted((pn for pn in prob.nodes if best.grown(pn)), key=lambda pn: -best.node_cost(pn)):
            for order in orders[:2]:  # undo one growth, re-place everything
                yield _greedy(prob, ar, order, domains, pod_cliques, idx_of, frozenset({pn.i}))
        rnd = random.Random(len(pods) * 7919 + len(prob.nodes))  # deterministic: same input, same plan
        nodes = [pn.i for pn in prob.nodes]
        while True:
            w = [rnd.uniform(0.5, 1.5) for _ in pods]
            order = sorted(range(len(pods)), key=lambda j: (len(pods[j].eligible) * w[j], -pods[j].pod.cpu_m * w[j]))
            if rnd.random() < 0.25:  # a perturbed order from scratch
                yield _greedy(prob, ar, order, domains, pod_cliques, idx_of)
            else:  # ruin one to three nodes of the best plan (grown ones more often) and recreate
                grown = [pn.i for pn in prob.nodes if best.grown(pn)]
                pool = grown if grown and rnd.random() < 0.6 else nodes
                ruin = set(rnd.sample(pool, min(len(pool), rnd.randint(1, 3))))
                ruin |= set(rnd.sample(nodes, min(len(nodes), rnd.randint(0, 1))))
                start: tuple[int, int, int, int] | None = None
                if rnd.random() < 0.5:
                    n = rnd.choice(sorted(ruin))
                    options = [p for p in presets if p[0] == n]
                    start = rnd.choice(options) if options else None
                yield _recreate(prob, ar, best, ruin, order, domains, pod_cliques, idx_of,
                                (start,) if start else ())

    rounds = 0
    if not proven(best):
        for s in tries():
            rounds += 1
            if s is not None and _key(prob, s) >= _key(prob, best):  # equal: a sideways move, to get unstuck
                better = _key(prob, s) > _key(prob, best)
                best = s
                if better and proven(best):
                    break
            if rounds >= max_rounds or time.monotonic() + one > deadline:
                break
    return best
