"""Nodes (home): one row per node — status, CPU/memory capacity/allocatable/requested, pods, NFD labels, VM."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Footer, Header, Input, Static

from console.infra.vms import legend
from console.kube.cluster import ClusterSnapshot
from console.kube.model import fmt_cpu, fmt_mem
from console.kube.nodetable import SORT_KEYS, NodeRow
from console.kube.nodetable import node_rows as table_rows
from console.runbook.held import HeldRun, held_runs
from console.tui.filter import Filter, SelectorError, parse_filter
from console.tui.messages import ClusterView
from console.tui.safety import dangerous
from console.tui.screens.base import ConsoleScreen
from console.tui.widgets.cells import capacity_cell, status_text, theme_colors, usage_cell, usage_note
from console.tui.widgets.table import Cell, Column, VirtualTable

ROLES_MAX = 24  # a node with many roles: cut there (ellipsis) rather than push other columns out
HELD_MARK = "*"  # after the name of a node an unfinished run holds (legend below the status line)
HELD_EVERY_S = 5.0  # journals are local files: re-read them now and then (another terminal may run one)


class HeldRunsRead(Message):
    """The unfinished runs per node, read from the run journals by a worker."""

    def __init__(self, runs: dict[str, list[HeldRun]]) -> None:
        super().__init__()
        self.runs = runs


def columns(show_vm: bool, wide: bool, roles: int = 13) -> list[Column]:
    """At 80 columns: name, status, requested/allocatable, in use (% of allocatable, as kubectl top) and the VM;
    pods, NFD labels, roles and version fold first (the table's note says how many). Wide: capacity too, and usage
    in cores/Mi like kubectl top. `roles`: the ROLES width, the longest roles text (kubectl's
    `control-plane,master`), so roles are never cut where the column shows."""
    cols = [
        Column("name", "NAME", 17, flex=True),
        Column("status", "STATUS", 8),
        Column("cpu", "CPU cap/alloc/req" if wide else "CPU req/alloc", 19 if wide else 13),
        Column("mem", "MEM cap/alloc/req" if wide else "MEM req/alloc", 25 if wide else 17),
        Column("cpu_use", "CPU use" if wide else "CPU%", 9 if wide else 4, priority=1, right=True),
        Column("mem_use", "MEM use" if wide else "MEM%", 10 if wide else 4, priority=1, right=True),
        Column("pods", "PODS", 4, priority=3, right=True),
        Column("nfd", "NFD", 3, priority=4, right=True),
        Column("roles", "ROLES", roles, priority=5),
        Column("version", "VERSION", 8, priority=6),
    ]
    if show_vm:
        cols.append(Column("vm", "VM", 18 if wide else 10, priority=2))
    return cols


def fits(cols: list[Column], width: int) -> bool:
    """Every column fits in `width` (one space between columns, one cell for the vertical scrollbar)."""
    return sum(c.width for c in cols) + len(cols) - 1 + 1 <= width


def node_rows(snap: ClusterSnapshot) -> list[tuple[str, ...]]:
    """Plain-text rows (name, roles, status, cpu cap/alloc/req, mem cap/alloc/req, pods, version), sorted by
    name — the first version's API, kept for callers that want text without the UI."""
    out: list[tuple[str, ...]] = []
    for r in table_rows(snap):
        n = r.node
        out.append((
            n.name, ",".join(n.roles) or "<none>", n.status,
            f"{fmt_cpu(n.capacity.cpu_m)}/{fmt_cpu(n.allocatable.cpu_m)}/{fmt_cpu(r.requested.cpu_m)}",
            f"{fmt_mem(n.capacity.memory)}/{fmt_mem(n.allocatable.memory)}/{fmt_mem(r.requested.memory)}",
            str(r.requested.pods), n.kubelet_version,
        ))
    return out


class RowCells(Sequence[Sequence[Cell]]):
    """Cells rendered on demand, so only the rows on screen are ever formatted."""

    def __init__(self, rows: list[NodeRow], colors: dict[str, str], wide: bool,
                 held: dict[str, list[HeldRun]] | None = None, pods_known: bool = True) -> None:
        self.rows, self.colors, self.wide = rows, colors, wide
        self.held = held or {}
        self.pods_known = pods_known  # False: the pods are not listed (yet, or refused): requests are unknown
        self._done: dict[int, tuple[Cell, ...]] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        cells = self._done.get(i)
        if cells is None:
            cells = self._done[i] = self._render(self.rows[i])
        return cells

    def _render(self, r: NodeRow) -> tuple[Cell, ...]:
        n, c = r.node, self.colors
        vm: Cell = ""
        if r.vm is not None:
            vm = Text(r.vm.cell(r.stale, self.wide))
            if r.stale:  # "*" Nova's flavor is out of date, "!" the kubelet is stale (legend: status line, help)
                vm.append(r.stale.markers, style=f"bold {c.get('capacity-crit', 'red')}")
        name: Cell = n.name
        if n.name in self.held:
            name = Text(n.name).append(HELD_MARK, style=f"bold {c.get('status-pending', 'yellow')}")
        known = self.pods_known
        return (
            name,
            status_text(n, c, short=True),
            capacity_cell("cpu", n.capacity.cpu_m, n.allocatable.cpu_m, r.requested.cpu_m if known else None, c,
                          wide=self.wide),
            capacity_cell("mem", n.capacity.memory, n.allocatable.memory, r.requested.memory if known else None, c,
                          wide=self.wide),
            usage_cell("cpu", r.usage.cpu_m if r.usage else None, n.allocatable.cpu_m, c, wide=self.wide),
            usage_cell("mem", r.usage.memory if r.usage else None, n.allocatable.memory, c, wide=self.wide),
            str(r.requested.pods) if known else "?",
            Text(str(r.nfd_labels), style=c.get("label-nfd", "")) if r.nfd_labels else "0",
            ",".join(n.roles) or "<none>",
            n.kubelet_version,
            vm,
        )


class NodesScreen(ConsoleScreen):
    CSS_PATH = Path(__file__).with_suffix(".tcss")
    HELP = ("Every node with its status, CPU and memory (bar = requested / allocatable), in use (CPU%/MEM% of "
            "allocatable from metrics.k8s.io, as kubectl top node; – when not known), pods, NFD labels "
            "and backing VM: its flavor, or what the hypervisor runs where that differs from the flavor. "
            f"VM markers: {legend(long=True)}. Filter with / (text, !text inverts, -l label selector). "
            "Columns that do not fit are dropped, VERSION, ROLES, NFD and PODS first; the line under the table "
            "says how many and explains the markers shown; w shows every column (←/→ scroll).")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "app.quit", "Quit", id="quit"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="nodes-clear-filter"),
        Binding("slash", "filter", "Filter", id="nodes-filter"),
        Binding("enter", "open", "Open", id="nodes-open"),
        Binding("space", "mark", "Mark", id="nodes-mark"),
        Binding("c", "compare", "Compare", id="nodes-compare"),
        Binding("p", "pending", "Pending", id="nodes-pending"),
        dangerous(Binding("s", "scale_up", "Scale up", show=False, id="nodes-scale-up"), needs="scale-up"),
        dangerous(Binding("R", "resume_run", "Resume run", show=False, id="nodes-resume-run"), needs="scale-up"),
        Binding("N", "sort('name')", "Sort by name", show=False, id="sort-name"),
        Binding("T", "sort('status')", "Sort by status", show=False, id="sort-status"),
        Binding("C", "sort('cpu')", "Sort by CPU requested", show=False, id="sort-cpu"),
        Binding("M", "sort('mem')", "Sort by memory requested", show=False, id="sort-mem"),
        Binding("U", "sort('cpu-use')", "Sort by CPU in use", show=False, id="sort-cpu-use"),
        Binding("W", "sort('mem-use')", "Sort by memory in use", show=False, id="sort-mem-use"),
        Binding("O", "sort('pods')", "Sort by pod count", show=False, id="sort-pods"),
        Binding("F", "sort('nfd')", "Sort by NFD label count", show=False, id="sort-nfd"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.filter = Filter()
        self.filter_error = ""
        self.sort_key = "name"
        self.sort_reverse = False
        self.shown: list[NodeRow] = []
        self.held: dict[str, list[HeldRun]] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Connecting…", id="nodes-status", classes="status-line")
        yield Static("", id="nodes-held", classes="status-line")
        yield Input(placeholder="filter: text, !text, -l key=value,!key", id="nodes-filter")
        yield VirtualTable(columns(False, False), empty_text="Loading nodes…", id="nodes-table")
        yield Footer()

    def on_mount(self) -> None:
        self.ready = True
        self.query_one("#nodes-filter", Input).display = False
        self.query_one(VirtualTable).focus()
        self.view_changed(self.app.view)
        self.read_held()
        self.set_interval(HELD_EVERY_S, self.read_held)

    def on_screen_resume(self) -> None:
        if self.ready:
            self.read_held()  # back from a scale-up screen: its run may have finished or stopped

    # -- nodes held by unfinished runs (journals read in a worker) --------
    @work(thread=True, exclusive=True, group="nodes-held", exit_on_error=False)
    def read_held(self) -> None:
        self.post_message(HeldRunsRead(held_runs()))

    def on_held_runs_read(self, msg: HeldRunsRead) -> None:
        if msg.runs == self.held:
            return
        self.held = msg.runs
        line = self.query_one("#nodes-held", Static)
        line.display = bool(self.held)
        if self.held:
            c = theme_colors(self.app)
            text = Text(HELD_MARK, style=f"bold {c.get('status-pending', 'yellow')}", no_wrap=True,
                        overflow="ellipsis")
            text.append(" held by an unfinished run (R resumes): ")
            text.append("; ".join(f"{node} {runs[-1].kind} {runs[-1].status}: {runs[-1].state}"
                                  for node, runs in sorted(self.held.items())))
            line.update(text)
        self.render_rows()

    @property
    def table(self) -> VirtualTable:
        return self.query_one("#nodes-table", VirtualTable)

    # -- rendering ------------------------------------------------------
    def view_changed(self, view: ClusterView) -> None:
        if self.ready:
            self.render_rows()

    def on_resize(self) -> None:
        if self.ready:
            self.render_rows()

    def render_rows(self) -> None:
        view: ClusterView = self.app.view
        table = self.table
        roles = max(min(max((len(",".join(r.node.roles) or "<none>") for r in view.rows), default=13), ROLES_MAX), 5)
        # capacity/allocatable/requested and usage in cores once every column fits in those formats (about 150
        # columns); below, the short formats, so that at 120 every column shows, ROLES (`control-plane,master`) whole
        wide = fits(columns(self.app.show_vms, True, roles), self.size.width)
        want = columns(self.app.show_vms, wide, roles)
        if want != table.columns:
            table.set_columns(want)
        rows = view.rows
        if self.sort_key != "name" or self.sort_reverse:
            rows = sorted(rows, key=SORT_KEYS[self.sort_key], reverse=self.sort_reverse)
        f = self.filter
        if self.filter_error:  # nothing matches a filter that cannot be read: say why where the rows would be
            rows = []
        elif not f.empty:
            rows = [r for r in rows if f.matches(r.search_text(), r.node.labels)]
        self.shown = rows
        table.empty_text = self._empty_text(view)
        stale = {side for r in rows if r.stale for side in r.stale.sides}
        table.set_legend(f"VM {legend(stale)}" if stale else "")  # the markers in the VM column, explained
        table.set_rows([r.name for r in rows], RowCells(rows, theme_colors(self.app), wide, self.held,
                                                        pods_known="pods" not in view.unknown))
        self.update_status(view)

    def _empty_text(self, view: ClusterView) -> str:
        """What the table says when it has no row: why (a bad filter, no match, no node, not loaded yet)."""
        typed = self.query_one("#nodes-filter", Input).value.strip()
        if self.filter_error:
            return f"invalid filter {typed!r}: {self.filter_error}"
        if view.rows and not self.filter.empty:
            return f"no nodes match {typed!r} ({len(view.rows)} nodes; esc clears the filter)"
        if self.app.kube.nodes.loading:
            return self.app.gateways.unreadable("nodes") or "Loading nodes…"
        return "no nodes in this cluster"

    def update_status(self, view: ClusterView) -> None:
        stale = getattr(self.app, "stale", None)
        self.table.set_class(bool(stale), "stale")  # dimmed: the rows are what the cache last knew
        if stale:
            text = Text(f"{stale} · ", style=theme_colors(self.app).get("error", "red"), no_wrap=True,
                        overflow="ellipsis")
            text.append(f"{len(view.rows)} nodes (stale)")
            if self.app.api_error and not view.rows:  # nothing loaded yet: say why too
                text.append(f" · {self.app.api_error}", style=theme_colors(self.app).get("error", "red"))
        elif self.app.api_error and not view.rows:
            text = Text(self.app.api_error, style=theme_colors(self.app).get("error", "red"))
        elif not view.rows and self.app.kube.nodes.loading:
            cannot = self.app.gateways.unreadable("nodes")  # else "Loading nodes…" would stay for good
            self.table.empty_text = self._empty_text(view)
            self.table.refresh()
            text = Text(cannot, style=theme_colors(self.app).get("error", "red")) if cannot else \
                Text(f"Loading nodes from {self.app.kube.target.server}…")
        elif self.app.kube.nodes.loading:  # the first pages: the rest of the list streams in
            text = Text(f"loading… {len(view.rows)} nodes so far from {self.app.kube.target.server}", no_wrap=True,
                        overflow="ellipsis")
        else:
            total = len(view.rows)
            count = f"{len(self.shown)}/{total} nodes" if not self.filter.empty else f"{total} nodes"
            text = Text(count, no_wrap=True, overflow="ellipsis")
            if "pods" in view.unknown:  # requests and Pending pods are unknown, not zero
                cannot = self.app.gateways.unreadable("pods")
                text.append(f" · {cannot or 'loading pods…'}",
                            style=theme_colors(self.app).get("error", "red") if cannot else "dim")
            else:
                text.append(f" · {len(view.snapshot.pods)} pods")
            if view.pending:
                text.append(f" · {len(view.pending)} Pending",
                            style=theme_colors(self.app).get("status-pending", "yellow"))
            usage = usage_note(getattr(self.app, "metrics", None))
            if usage:
                text.append(f" · {usage}", style="dim")
            if self.table.marked:
                text.append(f" · marked {', '.join(sorted(self.table.marked))}")
            if self.sort_key != "name":
                text.append(f" · sort {self.sort_key}{' ↑' if self.sort_reverse else ''}")
            stale = {side for r in view.rows if r.stale for side in r.stale.sides}
            if stale:
                text.append(f" · VM {legend(stale)}", style=theme_colors(self.app).get("capacity-crit", "red"))
            if self.filter_error:
                text.append(f" · {self.filter_error}", style=theme_colors(self.app).get("error", "red"))
            elif not self.filter.empty:
                text.append(f" · filter {self.query_one('#nodes-filter', Input).value}")
        self.query_one("#nodes-status", Static).update(text)

    # -- filter ---------------------------------------------------------
    def action_filter(self) -> None:
        box = self.query_one("#nodes-filter", Input)
        box.display = True
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "nodes-filter":
            return
        try:
            self.filter = parse_filter(event.value)
            self.filter_error = ""
        except SelectorError as e:
            self.filter_error = str(e)
        self.render_rows()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "nodes-filter":
            event.input.display = bool(event.value)
            self.table.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#nodes-filter", Input)
        if box.value or box.display:
            box.value = ""
            box.display = False
            self.filter, self.filter_error = Filter(), ""
            self.render_rows()
        self.table.focus()

    def on_key(self, event: Any) -> None:
        box = self.query_one("#nodes-filter", Input)
        if event.key == "escape" and box.has_focus:
            event.stop()
            self.action_clear_filter()
        elif event.key == "down" and box.has_focus:
            event.stop()
            self.table.focus()

    # -- actions --------------------------------------------------------
    def action_sort(self, key: str) -> None:
        if self.sort_key == key:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_key, self.sort_reverse = key, False
        self.render_rows()

    def on_virtual_table_selected(self, event: VirtualTable.Selected) -> None:
        self.open_node(event.key)

    def action_open(self) -> None:
        key = self.table.cursor_key
        if key:
            self.open_node(key)

    def open_node(self, name: str) -> None:
        from console.tui.screens.node import NodeDetailScreen

        self.app.push_screen(NodeDetailScreen(name))

    def action_mark(self) -> None:
        key = self.table.cursor_key
        if key is None:
            return
        marked = self.table.marked
        if key in marked:
            marked.discard(key)
        else:
            marked.add(key)
            while len(marked) > 2:  # compare takes two: forget the oldest other mark
                marked.discard(next(k for k in sorted(marked) if k != key))
        self.table.action_cursor(1)
        self.table.refresh()
        self.update_status(self.app.view)

    def action_compare(self) -> None:
        from console.tui.screens.compare import CompareScreen

        marked = sorted(self.table.marked)
        cur = self.table.cursor_key
        if len(marked) == 1 and cur and cur not in marked:
            marked.append(cur)
        if len(marked) != 2:
            self.notify("mark two nodes with space, then press c to compare their labels", severity="warning")
            return
        self.app.push_screen(CompareScreen(marked[0], marked[1]))

    def action_pending(self) -> None:
        from console.tui.command_grammar import Command

        self.app.run_command(Command("pending"))

    def action_resume_run(self) -> None:
        """Open the unfinished run holding the node under the cursor (the scale-up screen finds its journal)."""
        from console.tui.scaleup_start import start_scale_up

        key = self.table.cursor_key
        runs = self.held.get(key or "", [])
        if not runs:
            held = ", ".join(sorted(self.held)) or "none"
            self.notify(f"no unfinished run holds {key}; nodes held by one: {held}", severity="warning")
            return
        run = runs[-1]
        if run.kind != "scale-up":
            self.notify(f"{key} is held by {run.kind} run {run.run_id} ({run.state}); resume it with: "
                        f"{run.resume_command}", severity="warning", timeout=15)
            return
        start_scale_up(self.app, run.node)

    def action_scale_up(self) -> None:
        from console.tui.scaleup_start import start_scale_up

        key = self.table.cursor_key
        if key:
            start_scale_up(self.app, key)
