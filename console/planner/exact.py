"""The exact planner: the problem as a mixed-integer program solved by HiGHS (highspy), lexicographically.

Variables: a[p,n] = pod p lands on node n (only where constraints admit it); per OpenStack node one binary per
flavor it may grow to (at most one); per libvirt node one binary per vCPU count and per memory step above the
current (at most one of each: the two dimensions grow independently). Rows: each pod at most once; per node the
pods' CPU, memory and count within the room of the chosen size; per hypervisor and for the project quota the
vCPUs/MiB added; per anti-affinity clique and topology domain at most one pod.

Three solves, each keeping the previous optimum (priorities of issue 13): 1. most pods placed; 2. least cost;
3. preferences (a grown node with PDB-blocked pods weighs more than all reboots together; a reboot weighs 1 when
live scale-ups are preferred) — so preferences only ever break ties between equally cheap plans.

HiGHS (github:ERGO-Code/HiGHS, MIT) through highspy, chosen on evidence (same models, two phases, CPU s):
                 installed        10 small   2 × 20×30   40×40   60×50
  highspy 1.16   81 MB w/ numpy     0.29       0.70       0.77    7.0
  scipy 1.17     216 MB             0.37       1.44       1.25    8.9   (the same HiGHS inside milp)
  OR-Tools 9.15  247 MB (pandas,    0.20       0.28*      0.31    1.6   * phase 2 "infeasible": its linear
                 protobuf, absl)                                          wrapper scales fractional MiB rows
OR-Tools was fastest on the largest model but wrong on one (CP-SAT needs integer coefficients) and three times
the size; highspy is the smallest and exact on the float model, and keeps the model between the phases.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass

from console.planner.problem import MiB, Problem, Solution

INF = float("inf")


@dataclass
class ExactResult:
    solution: Solution | None  # None: the solver found nothing in time
    optimal: bool
    bound: float | None  # lower bound on the least cost at the most pods placed (phase 2's dual bound)
    placed_optimal: bool  # phase 1 proved the number of pods placed maximal


class _Milp:
    """A MILP as column and row lists (rows sparse: {col: coeff})."""

    def __init__(self) -> None:
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.rows: list[tuple[dict[int, float], float, float]] = []

    def var(self, lb: float = 0.0, ub: float = 1.0) -> int:
        self.lb.append(lb)
        self.ub.append(ub)
        return len(self.lb) - 1

    def row(self, coeffs: dict[int, float], lo: float, hi: float) -> None:
        if coeffs:
            self.rows.append((coeffs, lo, hi))


@dataclass
class _Vars:
    a: dict[tuple[int, int], int]
    joint: dict[tuple[int, int], int]  # (node, level ≥ 1) → col
    cpu: dict[tuple[int, int], int]
    mem: dict[tuple[int, int], int]
    grown: dict[int, int]  # node → col of "grown" indicator (only where a preference needs it)
    count: dict[int, float]  # objective 1
    cost: dict[int, float]  # objective 2 (plus cost_const)
    pref: dict[int, float]  # objective 3
    cost_const: float


def build_milp(prob: Problem) -> tuple[_Milp, _Vars]:
    m = _Milp()
    a: dict[tuple[int, int], int] = {}
    for pp in prob.pods:
        for n in pp.eligible:
            a[pp.i, n] = m.var()
    by_node: dict[int, list[int]] = defaultdict(list)
    for (j, n) in a:
        by_node[n].append(j)
    joint: dict[tuple[int, int], int] = {}
    cpu: dict[tuple[int, int], int] = {}
    mem: dict[tuple[int, int], int] = {}
    grown: dict[int, int] = {}
    cost: dict[int, float] = {}
    pref: dict[int, float] = {}
    const = 0.0
    host_rows: dict[str, list[dict[int, float]]] = defaultdict(lambda: [{}, {}])
    host_const: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    hold_const: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # pinned Nova resizes' current sizes
    holds: dict[str, list[tuple[list[int], int, int]]] = defaultdict(list)  # host → (growth cols, cur vCPUs, MiB)
    quota_rows: list[dict[int, float]] = [{}, {}]
    quota_const = [0.0, 0.0]
    n_nodes = len(prob.nodes)
    prefs = prob.inp.prefs
    for pn in prob.nodes:
        pods_here = by_node.get(pn.i, [])
        cpu_row = {a[j, pn.i]: float(prob.pods[j].pod.cpu_m) for j in pods_here}
        mem_row = {a[j, pn.i]: prob.pods[j].pod.memory / MiB for j in pods_here}
        if pn.ranged:
            base_c, base_m = pn.cpu_levels[0], pn.mem_levels[0]
            cap_c, cap_m = float(base_c.cpu), base_m.mem / MiB
            pick: list[int] = []
            for k, lv in enumerate(pn.cpu_levels[1:], 1):
                col = cpu[pn.i, k] = m.var()
                cpu_row[col] = -float(lv.cpu - base_c.cpu)
                cost[col] = lv.cost
                pick.append(col)
                _add_growth(pn, col, lv.add_vcpus, 0, host_rows, quota_rows)
            m.row({col: 1.0 for col in pick}, -INF, 1.0)
            pick_m: list[int] = []
            for k, lv in enumerate(pn.mem_levels[1:], 1):
                col = mem[pn.i, k] = m.var()
                mem_row[col] = -(lv.mem - base_m.mem) / MiB
                cost[col] = lv.cost
                pick_m.append(col)
                _add_growth(pn, col, 0, lv.add_mib, host_rows, quota_rows)
            m.row({col: 1.0 for col in pick_m}, -INF, 1.0)
            if pn.pdb and prefs.avoid_pdb_blocked and (pick or pick_m):
                g = grown[pn.i] = m.var()
                pref[g] = n_nodes + 1.0
                for col in pick + pick_m:
                    m.row({g: 1.0, col: -1.0}, 0.0, INF)
        else:
            base = pn.joint[0]
            cap_c, cap_m = float(base.cpu), base.mem / MiB
            const += base.cost
            if base.add_vcpus or base.add_mib:  # a pinned size: a fixed growth
                if pn.host:
                    host_const[pn.host][0] += base.add_vcpus
                    host_const[pn.host][1] += base.add_mib
                    if pn.quota:
                        hold_const[pn.host][0] = max(hold_const[pn.host][0], pn.cur_vcpus)
                        hold_const[pn.host][1] = max(hold_const[pn.host][1], pn.cur_mib)
                if pn.quota:
                    quota_const[0] += base.add_vcpus
                    quota_const[1] += base.add_mib
            pick = []
            for k, lv in enumerate(pn.joint[1:], 1):
                col = joint[pn.i, k] = m.var()
                cpu_row[col] = -float(lv.cpu - base.cpu)
                mem_row[col] = -(lv.mem - base.mem) / MiB
                cost[col] = lv.cost - base.cost
                pick.append(col)
                _add_growth(pn, col, lv.add_vcpus, lv.add_mib, host_rows, quota_rows)
                w = (n_nodes + 1.0 if pn.pdb and prefs.avoid_pdb_blocked else 0.0) + (
                    1.0 if prefs.prefer_live and pn.method != "libvirt" else 0.0)
                if w:
                    pref[col] = w
            m.row({col: 1.0 for col in pick}, -INF, 1.0)
            if pick and pn.quota and pn.host:
                holds[pn.host].append((pick, pn.cur_vcpus, pn.cur_mib))
        m.row(cpu_row, -INF, cap_c)
        m.row(mem_row, -INF, cap_m)
        if pods_here and len(pods_here) > pn.room:
            m.row({a[j, pn.i]: 1.0 for j in pods_here}, -INF, float(pn.room))
    for pp in prob.pods:
        m.row({a[pp.i, n]: 1.0 for n in pp.eligible}, -INF, 1.0)
    for h, (rc, rm) in host_rows.items():
        hf = prob.hosts.get(h)
        if hf is None:
            continue
        # problem.py's hold rule: Σ added + the largest current size among the host's Nova resizes ≤ free
        if hf.vcpus is not None:
            free = hf.vcpus - host_const[h][0]
            m.row(rc, -INF, free - hold_const[h][0])
            for cols, cur_v, _ in holds.get(h, []):
                m.row({**rc, **{col: rc.get(col, 0.0) + cur_v for col in cols}}, -INF, free)
        if hf.memory_mib is not None:
            free = hf.memory_mib - host_const[h][1]
            m.row(rm, -INF, free - hold_const[h][1])
            for cols, _, cur_m in holds.get(h, []):
                m.row({**rm, **{col: rm.get(col, 0.0) + cur_m for col in cols}}, -INF, free)
    q = prob.inp.limits.quota
    if q.cores is not None:
        m.row(quota_rows[0], -INF, q.cores - quota_const[0])
    if q.ram_mib is not None:
        m.row(quota_rows[1], -INF, q.ram_mib - quota_const[1])
    for members, key in prob.conflicts:
        per_domain: dict[str, dict[int, float]] = defaultdict(dict)
        for j in members:
            for n in prob.pods[j].eligible:
                v = prob.domain_of(n, key)
                if v is not None:
                    per_domain[v][a[j, n]] = 1.0
        for row in per_domain.values():
            if len(row) > 1:
                m.row(row, -INF, 1.0)
    count = {col: 1.0 for col in a.values()}
    return m, _Vars(a, joint, cpu, mem, grown, count, cost, pref, const)


def _add_growth(pn, col: int, dv: int, dm: int, host_rows, quota_rows) -> None:  # type: ignore[no-untyped-def]
    if pn.host:
        if dv:
            host_rows[pn.host][0][col] = float(dv)
        if dm:
            host_rows[pn.host][1][col] = float(dm)
    if pn.quota:
        if dv:
            quota_rows[0][col] = float(dv)
        if dm:
            quota_rows[1][col] = float(dm)


class _Highs:
    """A quiet HiGHS instance holding the model (the public highspy.Highs prints a banner to fd 1 on creation,
    which would land in `plan -o json`; its base class is the same solver without the Python callbacks)."""

    def __init__(self, m: _Milp) -> None:
        import highspy
        import numpy as np
        from highspy import _core

        self.hp = highspy
        self.np = np
        self.h = _core._Highs()
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("threads", 1)
        self.ncol = len(m.lb)
        lp = _core.HighsLp()
        lp.num_col_ = self.ncol
        lp.num_row_ = len(m.rows)
        lp.col_cost_ = np.zeros(self.ncol)
        lp.col_lower_ = np.array(m.lb, dtype=np.float64)
        lp.col_upper_ = np.array(m.ub, dtype=np.float64)
        lp.row_lower_ = np.array([lo for _, lo, _ in m.rows], dtype=np.float64)
        lp.row_upper_ = np.array([hi for _, _, hi in m.rows], dtype=np.float64)
        starts: list[int] = [0]
        idx: list[int] = []
        vals: list[float] = []
        for coeffs, _, _ in m.rows:
            idx.extend(coeffs.keys())
            vals.extend(coeffs.values())
            starts.append(len(idx))
        lp.a_matrix_.format_ = _core.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = np.array(starts, dtype=np.int32)
        lp.a_matrix_.index_ = np.array(idx, dtype=np.int32)
        lp.a_matrix_.value_ = np.array(vals, dtype=np.float64)
        lp.integrality_ = [_core.HighsVarType.kInteger] * self.ncol
        self.h.passModel(lp)
        self.x: list[float] | None = None

    def objective(self, coeffs: dict[int, float], maximize: bool) -> None:
        np = self.np
        cost = np.zeros(self.ncol)
        for col, v in coeffs.items():
            cost[col] = v
        self.h.changeColsCost(self.ncol, np.arange(self.ncol, dtype=np.int32), cost)
        sense = self.hp.ObjSense.kMaximize if maximize else self.hp.ObjSense.kMinimize
        self.h.changeObjectiveSense(sense)

    def add_row(self, coeffs: dict[int, float], lo: float, hi: float) -> None:
        np = self.np
        self.h.addRow(lo, hi, len(coeffs), np.array(list(coeffs), dtype=np.int32),
                      np.array(list(coeffs.values()), dtype=np.float64))

    def run(self, seconds: float) -> tuple[bool, float | None, float | None]:
        """(optimal, objective, dual bound) after a solve of at most `seconds`; keeps the best solution seen."""
        self.h.setOptionValue("time_limit", max(0.01, seconds))
        if self.x is not None:
            sol = self.hp.HighsSolution()
            sol.col_value = self.x
            sol.value_valid = True
            self.h.setSolution(sol)
        self.h.run()
        status = self.h.getModelStatus()
        info = self.h.getInfo()
        if info.primal_solution_status != 2:  # kSolutionStatusFeasible
            return False, None, None
        self.x = list(self.h.getSolution().col_value)
        optimal = status == self.hp.HighsModelStatus.kOptimal
        return optimal, info.objective_function_value, info.mip_dual_bound


def solve_exact(prob: Problem, time_limit: float) -> ExactResult:
    deadline = time.monotonic() + time_limit
    m, v = build_milp(prob)
    if not v.a:
        return ExactResult(Solution({}), True, 0.0, True)
    hs = _Highs(m)
    hs.objective(v.count, maximize=True)
    opt1, best_count, _ = hs.run(deadline - time.monotonic())
    if best_count is None:
        return ExactResult(None, False, None, False)
    placed = round(best_count)
    hs.add_row(v.count, placed - 0.5, INF)
    hs.objective(v.cost, maximize=False)
    opt2, best_cost, bound = hs.run(deadline - time.monotonic())
    if best_cost is None:  # cannot happen: phase 1's solution stays feasible
        best_cost, opt2, bound = None, False, None
    if opt2 and best_cost is not None and v.pref:
        hs.add_row(v.cost, -INF, best_cost + 1e-6 * max(1.0, abs(best_cost)))
        hs.objective(v.pref, maximize=False)
        hs.run(max(0.05, deadline - time.monotonic()))
    x = hs.x or []

    def chosen(cols: dict[tuple[int, int], int]) -> dict[int, int]:
        return {i: k for (i, k), col in cols.items() if x[col] > 0.5}

    sol = Solution(chosen(v.a), chosen(v.joint), chosen(v.cpu), chosen(v.mem))
    lower = None if bound is None or not opt1 else bound + v.cost_const
    return ExactResult(sol, opt1 and opt2, lower, opt1)
