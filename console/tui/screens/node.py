"""Node detail: labels by origin (console/kube/nodelabels.py), resources, taints, conditions, annotations, pods,
events."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Footer, Header, Static

from console.infra.vms import legend
from console.kube.model import NodeInfo, fmt_cpu, fmt_mem
from console.kube.nodelabels import OTHER, UNKNOWN, Origin, group_labels, nfd_label_count, read_label_origins
from console.nfd.labels import FEATURE_NS
from console.tui.messages import ClusterView
from console.tui.safety import dangerous
from console.tui.screens.base import ConsoleScreen
from console.tui.widgets.cells import ABSENT, bar, status_text, theme_colors, usage_note

SECTIONS = ("resources", "labels", "taints", "conditions", "pods", "events", "annotations")


def age(seconds: float) -> str:
    s = max(int(seconds), 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit}"
    return f"{s}s"


class LabelOriginsLoaded(Message):
    """Each of the node's labels with its origin (computed in a worker from its NodeFeatures and the rules)."""

    def __init__(self, origins: dict[str, Origin], note: str = "") -> None:
        super().__init__()
        self.origins = origins
        self.note = note  # why the origins are not known ("" when they are)


class NodeDetailScreen(ConsoleScreen):
    CSS_PATH = Path(__file__).with_suffix(".tcss")
    HELP = ("One node: labels by origin (NFD source, NodeFeature, rule), resources, taints, conditions, pods, events, "
            f"annotations. VM markers after its size: {legend(long=True)}.")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("l", "jump('labels')", "Labels", id="node-labels"),
        Binding("r", "jump('resources')", "Resources", show=False, id="node-resources"),
        Binding("o", "jump('pods')", "Pods", id="node-pods"),
        Binding("e", "jump('events')", "Events", id="node-events"),
        Binding("a", "jump('annotations')", "Annotations", show=False, id="node-annotations"),
        Binding("j,down", "scroll(1)", "Scroll down", show=False, id="node-scroll-down"),
        Binding("k,up", "scroll(-1)", "Scroll up", show=False, id="node-scroll-up"),
        dangerous(Binding("s", "scale_up", "Scale up", id="node-scale-up"), needs="scale-up"),
    ]

    def __init__(self, node: str) -> None:
        super().__init__()
        self.node_name = node
        self._events_gen = -1
        self.events_watch: Any = None  # this node's events, field-selected (console/kube/events.EventWatch)
        self._node_rv = ""
        self._origins: dict[str, Origin] = {}
        self._origins_note = ""
        self._labels_seen: tuple[frozenset[str], str] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self.node_name, id="node-title", classes="status-line")
        with VerticalScroll(id="node-body"):
            for name in SECTIONS:
                yield Static("", id=f"node-{name}", classes="node-section")
        yield Footer()

    def on_mount(self) -> None:
        self.ready = True
        self.query_one("#node-body").focus()
        if self.app.events is not None:
            self.events_watch = self.app.events.watch_object("Node", self.node_name)
        self.view_changed(self.app.view)
        self.set_interval(1.0, self._refresh_events)
        if self.app.metrics is not None:
            self.app.metrics.want_pods(True)  # this screen shows the pods' usage: list PodMetrics while it is open

    def view_changed(self, view: ClusterView) -> None:
        if not self.ready:
            return
        node = view.snapshot.nodes.get(self.node_name)
        title = self.query_one("#node-title", Static)
        if node is None:
            title.update(Text(f"{self.node_name}: not in the cluster (deleted?)", style="bold"))
            return
        colors = theme_colors(self.app)
        row = view.rows_by_name.get(self.node_name)
        head = Text(f"{node.name}  ", style="bold")
        head.append_text(status_text(node, colors))
        head.append(f"  {','.join(node.roles) or '<none>'}  {node.kubelet_version}")
        if row and row.vm:
            name = "" if row.vm.name == node.name else f"{row.vm.name} "
            head.append(f"  VM {name}{row.vm.size_text()}")
            if row.stale:  # which side: Nova's flavor, the kubelet (legend on the nodes screen's help)
                head.append(f"  {row.stale.markers} {row.stale.text()}",
                            style=f"bold {colors.get('capacity-crit', 'red')}")
        title.update(head)
        seen = (frozenset(node.labels), node.annotations.get("nfd.node.kubernetes.io/feature-labels", ""))
        if seen != self._labels_seen:  # NFD relabelled: ask again where each label comes from
            self._labels_seen = seen
            self.load_origins(node)
        self._section("resources", self._resources(node, view, colors))
        self._section("labels", self._labels(node, colors))
        self._section("taints", self._taints(node))
        self._section("conditions", self._conditions(node, colors))
        self._section("pods", self._pods(view))
        self._section("annotations", self._annotations(node))
        self._refresh_events(force=True)

    def _section(self, name: str, body: Text) -> None:
        self.query_one(f"#node-{name}", Static).update(body)

    @staticmethod
    def _heading(title: str, colors: dict[str, str]) -> Text:
        return Text(f"{title}\n", style=f"bold {colors.get('primary', '')}")

    def _resources(self, node: NodeInfo, view: ClusterView, colors: dict[str, str]) -> Text:
        row = view.rows_by_name.get(node.name)
        req = row.requested if row else None
        usage = row.usage if row else None
        known = "pods" not in view.unknown  # the pods not listed: requested is unknown, not 0
        out = self._heading("Resources        capacity  allocatable  requested     in use", colors)
        for kind, cap, alloc, used, fmt, now in (
            ("cpu", node.capacity.cpu_m, node.allocatable.cpu_m, req.cpu_m if req else 0, fmt_cpu,
             usage.cpu_m if usage else None),
            ("memory", node.capacity.memory, node.allocatable.memory, req.memory if req else 0, fmt_mem,
             usage.memory if usage else None),
            ("pods", node.capacity.pods * 1000, node.allocatable.pods * 1000, (req.pods if req else 0) * 1000, fmt_cpu,
             -1),
        ):
            out.append(f"  {kind:<8} ")
            out.append_text(bar(used / alloc if alloc and known else 0.0, 5, colors))
            out.append(f" {fmt(cap):>9}  {fmt(alloc):>11}  {fmt(used) if known else '?':>9}")
            if now is None:  # not known: absent, never 0
                out.append(f"  {ABSENT:>9}", style="dim")
            elif now >= 0:  # kubectl top node: usage and its share of allocatable
                out.append(f"  {fmt(now):>9} {int(now / alloc * 100) if alloc else 0:>3}%")
            out.append("\n")
        if not known:
            out.append(f"  requested unknown: {self.app.gateways.unreadable('pods') or 'loading pods…'}\n")
        metrics = self.app.metrics
        note = usage_note(metrics)
        if note or (row is not None and usage is None and metrics is not None and metrics.snapshot().state == "live"):
            out.append(f"  {note or 'usage n/a: no metrics for this node (not Ready, or not scraped yet)'}\n",
                       style="dim")
        return out

    def _labels(self, node: NodeInfo, colors: dict[str, str]) -> Text:
        groups = group_labels(node.labels, node.annotations, self._origins)
        nfd = nfd_label_count(node.labels, node.annotations)
        out = self._heading(f"Labels ({len(node.labels)}, NFD {nfd}) by origin", colors)
        for group, labels in groups.items():
            style = colors.get("label-nfd", "")
            if group.startswith("rule "):
                style = colors.get("label-rule", "")
            elif group.startswith(("local", "custom", "NodeFeature ")):
                style = colors.get("label-local", "")
            elif group in (OTHER, UNKNOWN):
                style = ""
            out.append(f"  {group} ({len(labels)})\n", style=f"bold {style}")
            for key, value in labels.items():
                shown = key[len(FEATURE_NS) + 1:] if key.startswith(FEATURE_NS + "/") else key
                out.append(f"    {shown}", style=style)
                out.append(f"={value}\n" if value else "\n")
        if any(k.startswith(FEATURE_NS + "/") for k in node.labels):
            out.append(f"  (labels shown without {FEATURE_NS}/)\n", style="dim")
        if self._origins_note:
            out.append(f"  {self._origins_note}\n", style="dim")
        return out

    def _taints(self, node: NodeInfo) -> Text:
        out = self._heading("Taints", theme_colors(self.app))
        if not node.taints:
            out.append("  <none>\n")
        for t in node.taints:
            value = f"={t.get('value')}" if t.get("value") else ""
            out.append(f"  {t.get('key', '')}{value}:{t.get('effect', '')}\n")
        return out

    def _conditions(self, node: NodeInfo, colors: dict[str, str]) -> Text:
        out = self._heading("Conditions", colors)
        for ctype, status, reason in node.conditions or (("Ready", node.ready, ""),):
            # Ready=True is good; for the pressure conditions True is the bad state
            good = (status == "True") == (ctype == "Ready")
            style = colors.get("status-ready" if good else "status-notready", "")
            out.append(f"  {ctype:<16} ")
            out.append(f"{status:<8}", style=style)
            out.append(f" {reason}\n")
        out.append(f"  unschedulable    {str(node.unschedulable).lower()}\n")
        return out

    def _pods(self, view: ClusterView) -> Text:
        if "pods" in view.unknown:
            out = self._heading("Pods", theme_colors(self.app))
            out.append(f"  {self.app.gateways.unreadable('pods') or 'loading…'}\n")
            return out
        pods = sorted(view.pods_by_node.get(self.node_name, ()), key=lambda p: (p.namespace, p.name))
        out = self._heading(f"Pods ({len(pods)})  requests, in use", theme_colors(self.app))
        metrics = getattr(self.app, "metrics", None)
        snap = metrics.snapshot() if metrics is not None else None
        for p in pods[:200]:
            out.append(f"  {p.namespace}/{p.name:<28} {p.phase:<10} cpu {fmt_cpu(p.requests.cpu_m):>4}"
                       f"  mem {fmt_mem(p.requests.memory):>7}")
            used = snap.pod(p.namespace, p.name) if snap is not None else None
            if used is not None:
                out.append(f"  use {fmt_cpu(used.cpu_m):>4} {fmt_mem(used.memory):>7}")
            else:
                out.append(f"  use {ABSENT:>4}", style="dim")
            out.append("\n")
        if len(pods) > 200:
            out.append(f"  … and {len(pods) - 200} more\n")
        return out

    def _annotations(self, node: NodeInfo) -> Text:
        out = self._heading(f"Annotations ({len(node.annotations)})", theme_colors(self.app))
        for key in sorted(node.annotations):
            value = node.annotations[key]
            out.append(f"  {key}={value[:200]}{'…' if len(value) > 200 else ''}\n")
        if not node.annotations:
            out.append("  <none>\n")
        return out

    @work(thread=True, exclusive=True, group="node-label-origins", exit_on_error=False)
    def load_origins(self, node: NodeInfo) -> None:
        """Two list calls for this node: its NodeFeatures and the cluster's NodeFeatureRules; then nfd-master's
        merge and rules evaluated here to tell each label's origin."""
        gateways = getattr(self.app, "gateways", None)
        if gateways is None:
            return
        name = self.node_name
        origins, note = read_label_origins(node, lambda: gateways.node_features(name).get(name, []),
                                           lambda: gateways.rule_store().list(), self.app.settings.nfd_version)
        self.post_message(LabelOriginsLoaded(origins, note))

    def on_label_origins_loaded(self, msg: LabelOriginsLoaded) -> None:
        if msg.origins == self._origins and msg.note == self._origins_note:
            return
        self._origins, self._origins_note = msg.origins, msg.note
        node = self.node
        if node is not None and self.ready:
            self._section("labels", self._labels(node, theme_colors(self.app)))

    def _refresh_events(self, force: bool = False) -> None:
        events = self.events_watch
        if events is None or not self.ready:
            return
        gen = events.cache.generation
        if gen == self._events_gen and not force:
            return
        self._events_gen = gen
        colors = theme_colors(self.app)
        evs = events.recent()
        out = self._heading(f"Events ({len(evs)} recent)", colors)
        now = self.app.clock()
        for e in evs:
            when = age(now - e.last_seen.timestamp()) if e.last_seen else "?"
            style = colors.get("warning", "") if e.type == "Warning" else ""
            out.append(f"  {when:>4} {e.type:<7} {e.reason:<24} ", style=style)
            out.append(f"{e.message}\n")
        if not evs:
            cannot = "" if events.cache.synced.is_set() else self.app.gateways.unreadable("events")
            out.append("  <none>\n" if events.cache.synced.is_set() else f"  {cannot or 'loading…'}\n")
        self._section("events", out)

    def action_jump(self, section: str) -> None:
        self.query_one("#node-body", VerticalScroll).scroll_to_widget(
            self.query_one(f"#node-{section}"), top=True, animate=False
        )

    def action_scroll(self, lines: int) -> None:
        body = self.query_one("#node-body", VerticalScroll)
        body.scroll_relative(y=lines, animate=False)

    def action_scale_up(self) -> None:
        from console.tui.scaleup_start import start_scale_up

        start_scale_up(self.app, self.node_name)

    def on_unmount(self) -> None:
        self._events_gen = -1
        if self.events_watch is not None:
            self.events_watch.stop()
        if self.app.metrics is not None:
            self.app.metrics.want_pods(False)

    @property
    def node(self) -> Any:
        return self.app.view.snapshot.nodes.get(self.node_name)
