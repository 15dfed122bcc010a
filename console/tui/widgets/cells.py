"""Small renderers for table cells: coloured status, capacity bars (colours from the theme)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from console.kube.model import NodeInfo, fmt_cpu, fmt_mem

_cache: dict[str, dict[str, str]] = {}


def theme_colors(app: Any) -> dict[str, str]:
    """The active theme's CSS variables (cached per theme name)."""
    name = str(app.theme)
    if name not in _cache:
        _cache[name] = app.get_css_variables()
    return _cache[name]


def status_text(node: NodeInfo, colors: dict[str, str], short: bool = False) -> Text:
    ready = {"True": "Ready", "False": "NotReady"}.get(node.ready, "Unknown")
    color = colors.get("status-ready") if ready == "Ready" else colors.get("status-notready")
    text = Text(ready, style=color or "")
    if node.unschedulable:
        text.append(",")
        text.append("SchedDisabled" if short else "SchedulingDisabled", style=colors.get("status-cordoned") or "")
    return text


def ratio_color(ratio: float, colors: dict[str, str]) -> str:
    if ratio >= 0.9:
        return colors.get("capacity-crit", "red")
    if ratio >= 0.7:
        return colors.get("capacity-warn", "yellow")
    return colors.get("capacity-ok", "blue")


def bar(ratio: float, width: int, colors: dict[str, str]) -> Text:
    filled = max(0, min(width, round(ratio * width)))
    if ratio > 0 and filled == 0:
        filled = 1
    text = Text("█" * filled, style=ratio_color(ratio, colors))
    text.append("░" * (width - filled), style="dim")
    return text


def capacity_cell(kind: str, cap: int, alloc: int, req: int | None, colors: dict[str, str], *, wide: bool) -> Text:
    """`▇▇░░░ req/alloc` (narrow) or `▇▇░░░ cap/alloc/req` (wide); `req` None: unknown (pods not listed), `?`."""
    fmt = fmt_cpu if kind == "cpu" else fmt_mem
    ratio = req / alloc if alloc and req is not None else 0.0
    text = bar(ratio, 5 if wide else 4, colors)
    text.append(" ")
    shown = "?" if req is None else fmt(req)
    text.append(f"{fmt(cap)}/{fmt(alloc)}/{shown}" if wide else f"{shown}/{fmt(alloc)}")
    return text


ABSENT = "–"  # usage not known (no metrics-server, no permission, no metrics for this node): never shown as 0


def usage_cell(kind: str, used: int | None, alloc: int, colors: dict[str, str], *, wide: bool) -> Text:
    """What `kubectl top node` prints: `1125m 28%` / `1888Mi 11%` (wide) or `28%` (narrow); `–` when unknown."""
    if used is None:
        return Text(ABSENT, style="dim")
    pct = int(used / alloc * 100) if alloc else 0  # kubectl top: usage over allocatable, truncated
    text = Text()
    if wide:
        text.append(f"{used}m " if kind == "cpu" else f"{used // (1024 * 1024)}Mi ")
    text.append(f"{pct}%", style=ratio_color(used / alloc if alloc else 0.0, colors))
    return text


def usage_note(metrics: Any) -> str:
    """Why the usage columns show `–` (one line), or "" while usage is known or still loading."""
    snap = metrics.snapshot() if metrics is not None else None
    if snap is None:
        return "usage n/a"
    return f"usage n/a: {snap.reason}" if snap.state not in ("live", "loading") else ""
