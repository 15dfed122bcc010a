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

import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from console.planner.problem import Problem, Solution

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
    quota: np.ndarray  # bool (N)
    pref: np.ndarray  # preference penalty of growing (N)


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
                   np.array([pn.quota for pn in prob.nodes], dtype=bool), pref)


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
        self.qv -= float(dv0[ar.quota].sum())
        self.qm -= float(dm0[ar.quota].sum())
        self.assign: dict[int, int] = {}
        self.blocked: dict[tuple[int, str], np.ndarray] = {}  # (clique, key) → nodes whose domain is taken

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
            fk = ar.rc[sub] >= need_c[rg, None]
            fm = ar.rm[sub] >= need_m[rg, None]
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
        ok = (dv <= self.hv[h] + 1e-9) & (dm <= self.hm[h] + 1e-9)
        qn = ar.quota[idx]
        ok &= ~qn | ((dv <= self.qv + 1e-9) & (dm <= self.qm + 1e-9))
        delta = np.where(ok, delta, BIG)
        best_delta = delta.min()
        if best_delta >= BIG / 2:
            return False
        grows = (dv > 0) | (dm > 0)
        slack = (np.where(rg, 0, 0) + 0.0)
        # ties: equal cost, then no growth / the preferences, then the tightest fit (least CPU left)
        cand = np.flatnonzero(delta <= best_delta + 1e-9 * max(1.0, abs(best_delta)))
        pen = np.where(grows[cand], 1.0 + ar.pref[idx[cand]], 0.0)
        left = self._room_after(idx[cand], new_j[cand], new_k[cand], new_m[cand]) - need_c[cand]
        order = np.lexsort((left + slack[cand] if np.ndim(slack) else left, pen))
        pick = cand[order[0]]
        node = int(idx[pick])
        self.lc[node] = need_c[pick]
        self.lm[node] = need_m[pick]
        self.ln[node] += 1
        self.jl[node], self.kl[node], self.ml[node] = new_j[pick], new_k[pick], new_m[pick]
        self.hv[ar.host[node]] -= dv[pick]
        self.hm[ar.host[node]] -= dm[pick]
        if ar.quota[node]:
            self.qv -= dv[pick]
            self.qm -= dm[pick]
        self.assign[j] = node
        for cid, key in cliques:
            v = self.prob.domain_of(node, key)
            if v is not None:
                b = self.blocked.get((cid, key))
                if b is None:
                    b = self.blocked[cid, key] = np.zeros(len(self.prob.nodes), dtype=bool)
                b[domains[key][v]] = True
        return True

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
            skip_growth: frozenset[int] = frozenset()) -> Solution:
    st = _State(prob, ar)
    saved = None
    if skip_growth:  # a node whose growth is being undone: only its base size
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
    return st.solution()


def _key(prob: Problem, sol: Solution) -> tuple[int, float]:
    return (len(sol.assign), -round(sol.cost(prob), 9))


def solve(prob: Problem, time_limit: float = 2.0) -> Solution:
    t0 = time.monotonic()
    if not prob.pods:
        return Solution({})
    ar = _arrays(prob)
    domains = _domains(prob)
    pod_cliques: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for cid, (members, key) in enumerate(prob.conflicts):
        for j in members:
            pod_cliques[j].append((cid, key))
    idx_of = [np.array(pp.eligible, dtype=int) for pp in prob.pods]
    pods = prob.pods
    orders = [
        sorted(range(len(pods)), key=lambda j: (len(pods[j].eligible), -pods[j].pod.cpu_m, -pods[j].pod.memory, j)),
        sorted(range(len(pods)), key=lambda j: (-pods[j].pod.cpu_m, -pods[j].pod.memory, j)),
        sorted(range(len(pods)), key=lambda j: (-pods[j].pod.memory, -pods[j].pod.cpu_m, j)),
        sorted(range(len(pods)), key=lambda j: (-len(pod_cliques.get(j, ())), len(pods[j].eligible), j)),
    ]
    best = _greedy(prob, ar, orders[0], domains, pod_cliques, idx_of)
    budget = time_limit * 0.8
    first = time.monotonic() - t0
    for order in orders[1:]:
        if time.monotonic() - t0 + first > budget:
            break
        s = _greedy(prob, ar, order, domains, pod_cliques, idx_of)
        if _key(prob, s) > _key(prob, best):
            best = s
    # improvement: undo one grown node's growth at a time and re-place everything; keep what is better
    improved = True
    while improved and time.monotonic() - t0 + first < budget:
        improved = False
        grown = sorted((pn for pn in prob.nodes if best.grown(pn)), key=lambda pn: -best.node_cost(pn))
        banned: frozenset[int] = frozenset()
        for pn in grown:
            if time.monotonic() - t0 + first > budget:
                break
            for order in orders:
                s = _greedy(prob, ar, order, domains, pod_cliques, idx_of, banned | {pn.i})
                if _key(prob, s) > _key(prob, best):
                    best, improved = s, True
                    break
                if time.monotonic() - t0 + first > budget:
                    break
            if improved:
                break
    return best


def lower_bound(prob: Problem, sol: Solution) -> float | None:
    """A lower bound on the least cost of placing every pod — only when `sol` places every pod (else the optimum
    may place another set, which no such bound covers). Per set of pods sharing their admitting nodes (and for
    all pods together): the CPU and memory they need beyond those nodes' current room, at the cheapest rate any
    of those nodes grows at."""
    if len(sol.assign) < len(prob.pods):
        return None
    const = sum(pn.joint[0].cost for pn in prob.nodes if pn.joint)
    groups: dict[tuple[int, ...], list[int]] = defaultdict(list)
    for pp in prob.pods:
        groups[tuple(pp.eligible)].append(pp.i)
    groups[tuple(range(len(prob.nodes)))] = [pp.i for pp in prob.pods]
    rate_c: list[float] = []
    rate_m: list[float] = []
    room_c: list[float] = []
    room_m: list[float] = []
    for pn in prob.nodes:
        if pn.ranged:
            b_c, b_m = pn.cpu_levels[0], pn.mem_levels[0]
            rc = [lv.cost / (lv.cpu - b_c.cpu) for lv in pn.cpu_levels[1:] if lv.cpu > b_c.cpu]
            rm = [lv.cost / (lv.mem - b_m.mem) for lv in pn.mem_levels[1:] if lv.mem > b_m.mem]
            room_c.append(max(0, b_c.cpu))
            room_m.append(max(0, b_m.mem))
        else:
            b = pn.joint[0]
            rc = [(lv.cost - b.cost) / (lv.cpu - b.cpu) for lv in pn.joint[1:] if lv.cpu > b.cpu]
            rm = [(lv.cost - b.cost) / (lv.mem - b.mem) for lv in pn.joint[1:] if lv.mem > b.mem]
            room_c.append(max(0, b.cpu))
            room_m.append(max(0, b.mem))
        rate_c.append(min(rc, default=float("inf")))
        rate_m.append(min(rm, default=float("inf")))
    best = 0.0
    for nodes, members in groups.items():
        if not nodes:
            continue
        need_c = sum(prob.pods[j].pod.cpu_m for j in members) - sum(room_c[n] for n in nodes)
        need_m = sum(prob.pods[j].pod.memory for j in members) - sum(room_m[n] for n in nodes)
        lb = 0.0
        if need_c > 0:
            r = min(rate_c[n] for n in nodes)
            lb = max(lb, need_c * r if r != float("inf") else 0.0)
        if need_m > 0:
            r = min(rate_m[n] for n in nodes)
            lb = max(lb, need_m * r if r != float("inf") else 0.0)
        best = max(best, lb)
    return const + best
