"""What the hooks screen shows, built from plain data (no widgets, no I/O): the file list with where nodes
differ, each node's state for the open file, per-node label previews, the confirmation text, the write report
and the relabel outcome."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from console.kube.nfdfiles import NodeListing, WriteResult, differences
from console.nfd import versions as V
from console.nfd_preview import FilePreview

STDERR_SHOWN = 2048  # bytes of a hook's stderr/stdout shown inline; the rest is summarised
NODES_NAMED = 12  # nodes named in one line of a confirmation or report; the rest are counted
# s: a ConfigMap update reaches the pods within the kubelet's sync period (1m) plus its ConfigMap cache TTL
KUBELET_SYNC = 90.0


def labels_appear(kind: str, version: V.NfdVersion, deployment: Any) -> bool:
    """Whether this nfd-worker turns a file of `kind` into labels (a hook: only where it runs hooks)."""
    if kind != "hook":
        return True
    status = V.hooks_status(version)
    enabled = deployment.worker_config().hooks_enabled if deployment is not None else None
    return status == "enabled" or (status == "disabled-by-default" and bool(enabled))


def relabel_timeout(deployment: Any, targets: Iterable[Any]) -> float:
    """How long to watch for labels: the worker's sleep interval, plus the kubelet's sync for a ConfigMap."""
    interval = deployment.worker_config().sleep_interval if deployment is not None else 60.0
    configmap = any(t.mount.source == "configMap" for t in targets)
    return interval + (KUBELET_SYNC if configmap else 0.0) + 10.0


@dataclass(frozen=True)
class Entry:
    """One file name of one kind, as the list shows it."""

    kind: str
    name: str
    on: int  # nodes that have it
    of: int  # nodes read
    differs: bool  # the nodes that have it do not all have the same content

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.name}"

    @property
    def label(self) -> str:
        tag = "hook" if self.kind == "hook" else "file"
        mark = " ≠" if self.differs else ""
        count = f" {self.on}/{self.of}" if self.on != self.of else ""
        return f"{tag} {self.name}{mark}{count}"


def entries(listings: Mapping[str, Sequence[NodeListing]]) -> list[Entry]:
    """Every file name any readable node has, per kind, with how many nodes have it and whether they agree."""
    out: list[Entry] = []
    for kind, per_node in listings.items():
        readable = [x for x in per_node if not x.error]
        diff = {(d.kind, d.name): d for d in differences(readable)}
        names = sorted({f.name for x in readable for f in x.files})
        for name in names:
            d = diff.get((kind, name))  # type: ignore[arg-type]
            on = sum(1 for x in readable if any(f.name == name for f in x.files))
            out.append(Entry(kind, name, on, len(readable), d is not None and len(d.by_hash) > 1))
    return out


def unreadable(listings: Mapping[str, Sequence[NodeListing]]) -> str:
    """Why no file can be shown when no node could be read, else "": the reason all share (RBAC, found before
    trying), or the first node's."""
    every = [x for per_node in listings.values() for x in per_node]
    if not every or any(not x.error for x in every):
        return ""
    if len({x.error for x in every}) == 1:
        return f"not readable: {every[0].error}"
    return f"not readable on any node; {every[0].node}: {every[0].error}"


def node_states(listings: Sequence[NodeListing], name: str | None) -> dict[str, str]:
    """node -> what it has of `name`: "same" (the content most nodes hold), "differs", "missing" or the error
    (no file open: the errors only)."""
    hashes: dict[str, str] = {}
    out: dict[str, str] = {}
    for x in listings:
        if x.error:
            out[x.node] = x.error if x.error.startswith("cannot ") else f"cannot read: {x.error}"
            continue
        if name is None:
            continue
        f = next((f for f in x.files if f.name == name), None)
        if f is None:
            out[x.node] = "missing"
        else:
            hashes[x.node] = f.sha256
    if hashes:
        counts: dict[str, int] = {}
        for h in hashes.values():
            counts[h] = counts.get(h, 0) + 1
        common = max(counts, key=lambda h: (counts[h], h))
        for node, h in hashes.items():
            out[node] = "same" if h == common else f"differs ({h[:8]})"
    return out


def majority_node(listings: Sequence[NodeListing], name: str) -> str | None:
    """A node holding the content most nodes have (where to read the file from)."""
    states = node_states(listings, name)
    return next((n for n, s in sorted(states.items()) if s == "same"), None)


def named(nodes: Sequence[str]) -> str:
    shown = ", ".join(nodes[:NODES_NAMED])
    return shown + (f" and {len(nodes) - NODES_NAMED} more" if len(nodes) > NODES_NAMED else "") if nodes else "(none)"


def group_previews(previews: Mapping[str, FilePreview]) -> list[tuple[tuple[str, ...], FilePreview]]:
    """Nodes whose preview gives the same labels, together (most nodes first)."""
    groups: dict[tuple[tuple[str, str], ...], list[str]] = {}
    first: dict[tuple[tuple[str, str], ...], FilePreview] = {}
    for node in sorted(previews):
        key = tuple(sorted(previews[node].labels.items()))
        groups.setdefault(key, []).append(node)
        first.setdefault(key, previews[node])
    return sorted(((tuple(nodes), first[key]) for key, nodes in groups.items()), key=lambda g: (-len(g[0]), g[0]))


def preview_lines(grouped: Sequence[tuple[tuple[str, ...], FilePreview]]) -> list[str]:
    out: list[str] = []
    for nodes, p in grouped:
        out.append(f"on {named(list(nodes))}: {len(p.labels)} label(s)")
        out += [f"  {k}={v}" for k, v in p.labels.items()]
        if p.hook is not None and p.hook.error:
            out.append(f"  ✗ {p.hook.error}")
    return out


def confirm_text(verb: str, description: str, nodes: Sequence[str], diff: str,
                 grouped: Sequence[tuple[tuple[str, ...], FilePreview]], note: str = "") -> str:
    """The confirmation's body: where it goes, which nodes it reaches, what changes and the labels it gives."""
    lines = [f"Target: {description}", f"Nodes ({len(nodes)}): {named(list(nodes))}"]
    if note:
        lines.append(note)
    if grouped:
        lines.append("Labels NFD would give:" if verb == "Push" else "Labels this file gave (they go):")
        lines += preview_lines(grouped)
    if diff:
        lines += ["", diff.rstrip("\n")]
    return "\n".join(lines)


def report_text(verb: str, kind: str, name: str, results: Sequence[WriteResult], colors: Mapping[str, str]) -> Text:
    """One line per outcome: which nodes changed, which already had it, which failed and why."""
    t = Text()
    changed = [r.node for r in results if r.ok and r.changed]
    same = [r.node for r in results if r.ok and not r.changed]
    theirs = [r for r in results if r.conflict]
    failed = [r for r in results if not r.ok and not r.conflict]
    t.append(f"{verb} {kind} {name}: {len(changed)} changed, {len(same)} unchanged, "
             + (f"{len(theirs)} changed by someone else, " if theirs else "") + f"{len(failed)} failed\n",
             style="bold")
    if changed:
        t.append(f"  changed: {named(changed)}\n")
    if same:
        t.append(f"  already so: {named(same)}\n", style="dim")
    for r in theirs:
        t.append(f"  ≠ {r.node}: {r.error}\n", style=colors.get("warning", "yellow"))
    for r in failed:
        t.append(f"  ✗ {r.node}: {r.error}\n", style=colors.get("error", "red"))
    return t


def relabel_text(expected: Mapping[str, Mapping[str, str | None]], seen: Mapping[str, Mapping[str, str | None]],
                 colors: Mapping[str, str]) -> Text:
    """After the wait: per node, whether its labels are what the file gives."""
    t = Text()
    done = [n for n, want in expected.items() if dict(seen.get(n) or {}) == dict(want)]
    t.append(f"relabelled: {len(done)}/{len(expected)} nodes\n", style="bold")
    for node in sorted(expected):
        got = seen.get(node) or {}
        if node in done:
            shown = ", ".join(f"{k}={v}" if v is not None else f"-{k}" for k, v in sorted(expected[node].items()))
            t.append(f"  ✓ {node}: {shown or '(no labels)'}\n")
        else:
            wrong = [f"{k}: {got.get(k)!r}, want {v!r}" for k, v in sorted(expected[node].items()) if got.get(k) != v]
            t.append(f"  … {node}: {'; '.join(wrong)}\n", style=colors.get("warning", "yellow"))
    return t


def render_preview(p: FilePreview, version_text: str, colors: Mapping[str, str] | None = None,
                   nodes: Sequence[str] = ()) -> Text:
    """The preview panel: labels, dropped labels with reasons, hook errors and stderr."""
    colors = colors or {"error": "red", "warning": "yellow"}
    red, yellow = colors.get("error", "red"), colors.get("warning", "yellow")
    t = Text()
    where = f" on {named(list(nodes))}" if nodes else ""
    t.append(f"{p.kind} {p.name} under {version_text}{where}\n", style="bold")
    if p.note:
        t.append(p.note + "\n", style="italic")
    hook = p.hook
    if hook is not None and hook.error:
        t.append(f"✗ {hook.error}\n", style=f"bold {red}")
        if hook.timed_out:
            t.append("  would have hung nfd-worker: it has no timeout for hooks\n", style=red)
    t.append(f"Labels ({len(p.labels)}):\n", style="bold")
    for k, v in p.labels.items():
        t.append(f"  {k}={v}\n")
    if not p.labels:
        t.append("  (none)\n")
    if p.dropped:
        t.append(f"Dropped ({len(p.dropped)}):\n", style="bold")
        for d in p.dropped[:50]:
            t.append(f"  {d.key[:80]}={d.value[:40]!r}: {d.reason} (nfd-{d.stage})\n", style=yellow)
        if len(p.dropped) > 50:
            t.append(f"  … and {len(p.dropped) - 50} more\n", style=yellow)
    if hook is not None and hook.stderr:
        t.append(f"stderr ({len(hook.stderr)} chars):\n", style="bold")
        t.append(_cap(hook.stderr) + "\n", style="dim")
    if hook is not None and hook.error and hook.stdout:
        t.append(f"stdout (discarded, {len(hook.stdout)} chars):\n", style="bold")
        t.append(_cap(hook.stdout) + "\n", style="dim")
    other = [w for w in p.warnings if not w.startswith("label ") and not (hook and hook.error and hook.error in w)]
    if other:
        t.append("Warnings:\n", style="bold")
        for w in other[:20]:
            t.append(f"  {w}\n", style=yellow)
    return t


def _cap(s: str) -> str:
    s = "".join(c if c.isprintable() or c in "\n\t" else "�" for c in s[:STDERR_SHOWN])
    return s + ("\n… (truncated)" if len(s) >= STDERR_SHOWN else "")
