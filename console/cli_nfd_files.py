"""`console nfd files list|push|rm`: hooks and feature files where the cluster's nfd-worker reads them.

    console nfd files list [-l SELECTOR | --node NODE ...] [--kind hook|feature] [-o json]
    console nfd files push FILE --kind hook|feature [--name NAME] (-l SELECTOR | --node NODE ...)
                           [--dry-run] [--yes] [--no-wait] [-o json]
    console nfd files rm NAME --kind hook|feature (-l SELECTOR | --node NODE ...) [--yes] [--no-wait] [-o json]

The store is what the nfd-worker DaemonSet mounts at source.d / features.d (found by console/kube/nfddiscovery):
a hostPath volume is each node's directory, reached with the node access of the scale-up runbooks
(`node_access`: debug-pod, ssh, guest-agent); a ConfigMap volume is that ConfigMap, applying to every node the
DaemonSet runs on. `push` shows where it writes, which nodes, what each node has now and the labels the file
gives each node with this cluster's NFD version and master configuration; asks to confirm naming the nodes
(unless --yes); writes atomically (a temp file renamed onto the name, 0755 for hooks, 0644 for feature files,
at most 65536 bytes as nfd-worker reads); reports per node; then watches the nodes' labels until nfd-master has
relabelled them (up to the worker's sleep interval and a margin) unless --no-wait. A node that already has the
content is left alone. Every write goes through the session's Guard: read-only refuses, audit before.

Each node is written only while its file is still the version the preview showed (a hostPath file: its sha256,
compared and renamed by one script on the node; a ConfigMap: its resourceVersion, or the key's content): a file
someone changed since is left as they made it, and the command ends with a conflict (exit 1, JSON "error":
"conflict", the nodes that were written and those that were not); run it again to see the new preview. A node
that could not be listed for the preview is not written.

Exit codes:
  0  done (or nothing to do, or --dry-run)
  1  failed on some node(s) (the message and JSON say which; the others are written), a node could not be listed,
     or a conflict: the file changed on some node(s) since the preview (not overwritten)
  2  usage (bad file, name, selector, no such node), refused (read-only, audit log unwritable, no NFD found, a
     mount the console cannot write)
  3  written, but the labels were not seen on every node within the wait
  5  not confirmed (answered no, or stdin is not a terminal and --yes was not given), or interrupted (Ctrl-C)
  6  the Kubernetes API could not be used (unreachable, TLS, 401/403 while reading), or NFD could not be read
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from console.cli_nfd_deploy import EXIT_BACKEND, EXIT_FAILED, EXIT_OK, EXIT_USAGE, Stop

if TYPE_CHECKING:
    from console.nfd.deployment import FileKind

EXIT_NOT_SEEN = 3
WAIT_MARGIN = 15.0  # seconds past the worker's sleep interval: nfd-master's update and the watch event
# a ConfigMap volume reaches the pod after the kubelet's sync period plus its ConfigMap cache TTL (1 min each by
# default: kubernetes.io/docs/concepts/configuration/configmap/#mounted-configmaps-are-updated-automatically)
PROJECTION_MARGIN = 120.0
KINDS: tuple[FileKind, ...] = ("hook", "feature")


def add_parser(sub: Any) -> None:
    """`files` under `console nfd`."""
    p = sub.add_parser("files", help="hooks and feature files where nfd-worker reads them (per node)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    fs = p.add_subparsers(dest="files_command", metavar="ACTION", required=True)
    ls = fs.add_parser("list", help="what each node has in source.d / features.d, and where nodes differ")
    ls.add_argument("--kind", choices=KINDS, default=None, help="hooks or feature files only (default: both)")
    _nodes(ls, required=False)
    pu = fs.add_parser("push", help="write one hook or feature file to the chosen nodes (preview, confirm)")
    pu.add_argument("file", metavar="FILE", help="local file with the content (- : standard input, with --name)")
    pu.add_argument("--name", default=None, help="file name on the node (default: FILE's own name)")
    pu.add_argument("--kind", choices=KINDS, required=True)
    pu.add_argument("--dry-run", action="store_true", help="show the plan and the label preview, change nothing")
    _nodes(pu, required=True)
    _write(pu)
    rm = fs.add_parser("rm", help="remove one hook or feature file from the chosen nodes (confirm)")
    rm.add_argument("name", metavar="NAME")
    rm.add_argument("--kind", choices=KINDS, required=True)
    rm.add_argument("--dry-run", action="store_true", help="show the plan, change nothing")
    _nodes(rm, required=True)
    _write(rm)


def _nodes(p: argparse.ArgumentParser, *, required: bool) -> None:
    g = p.add_mutually_exclusive_group(required=required)
    g.add_argument("-l", "--selector", default=None, help="label selector of the nodes, as kubectl -l")
    g.add_argument("--node", nargs="+", action="extend", default=[], metavar="NODE", help="node name(s)")
    p.add_argument("--node-access", choices=("debug-pod", "ssh", "guest-agent"), default=None,
                   help="how to reach a node for a hostPath directory (default: config, debug-pod)")
    p.add_argument("--node-debug-image", metavar="IMAGE", default=None)
    p.add_argument("--node-debug-namespace", metavar="NS", default=None)
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")


def _write(p: argparse.ArgumentParser) -> None:
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p.add_argument("--no-wait", action="store_true", help="do not wait for nfd-master to relabel the nodes")


def run(args: argparse.Namespace) -> int:
    command = f"nfd files {args.files_command}"
    try:
        doc, text, code = {"list": _list, "push": _push, "rm": _rm}[args.files_command](args)
    except Stop as e:
        return e.report(command, args.output)
    except KeyboardInterrupt:
        from console.cli_nfd_deploy import interrupted

        return interrupted(command, args.output, "interrupted; a node whose write had begun has the old file or "
                           "the new one, never a part (each write is a rename): `nfd files list` shows what each "
                           "node has")
    doc["exit_code"] = code
    if args.output == "json":
        print(json.dumps(doc, indent=1, default=str))
        if code:  # the one line a failure has on stderr, as with text
            print(f"{command}: {doc['message']}", file=sys.stderr)
    else:
        print(text)
    return code


# -- the cluster's NFD and its file target --------------------------------------------------------------------


class _Ctx:
    def __init__(self, args: argparse.Namespace) -> None:
        from console.cli_nfd_deploy import _connect
        from console.config import ConfigError
        from console.config import load as load_settings
        from console.guard import Guard

        try:
            self.settings = load_settings({
                "kubeconfig": args.kubeconfig, "context": args.context, "read_only": getattr(args, "read_only", None),
                "node_access": args.node_access, "node_debug_image": args.node_debug_image,
                "node_debug_namespace": args.node_debug_namespace})
        except ConfigError as e:
            raise Stop(EXIT_USAGE, "error", str(e), "bad-config") from e
        self.guard = Guard.from_settings(self.settings)
        self.previews: dict[tuple[str, str, str, str], Any] = {}
        self.api = _connect(self.settings)
        self.deployment = self._discover()

    def _discover(self) -> Any:
        from console.kube.nfddiscovery import NfdDiscoveryError, discover_nfd

        try:
            found = self._call(lambda: discover_nfd(self.api))
        except NfdDiscoveryError as e:
            from console.cli_nfd_status import discovery_failed

            kind, message, extra = discovery_failed(e, self.settings.kubeconfig, self.settings.context)
            raise Stop(EXIT_BACKEND, "error", message, kind, **extra) from e
        if found is None:
            raise Stop(EXIT_USAGE, "refused", "no node-feature-discovery in this cluster (no nfd-worker DaemonSet in "
                                              "any namespace): nothing reads hooks or feature files; `nfd local` "
                                              "previews them offline", "no-nfd")
        return found

    def _call(self, fn: Any) -> Any:
        """The Kubernetes API unusable (unreachable, TLS, 401, 403 while reading) → exit 6; a ConfigMap target's
        store errors as `nfd apply` words them (conflict / rejected → 1, RBAC refusal → 2)."""
        import urllib3
        from kubernetes.client.exceptions import ApiException

        from console.cli_nfd_deploy import _backend_error, _unreachable
        from console.kube.nfdstore import NfdStoreError

        try:
            return fn()
        except NfdStoreError as e:
            raise _backend_error(e, "the ConfigMap volume", self.settings) from e
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as e:
            if isinstance(e, ApiException) and e.status == 400:
                raise Stop(EXIT_USAGE, "error", f"the API server refused the request: {e.reason} "
                                                "(a bad label selector?)", "bad-selector") from e
            raise _unreachable(e, self.settings) from e

    def target(self, kind: FileKind) -> Any:
        from console.kube.nfdfiles import FileTargetError, file_target
        from console.kube.nfdstore import NfdStoreError

        access = None
        mount = self.deployment.mounts.get(kind)
        if mount is not None and mount.source == "configMap":  # refuse unsent what RBAC would refuse
            from console.kube.access import Need, review

            ns = self.deployment.worker.namespace if self.deployment.worker is not None else self.deployment.namespace
            access = review(self.api, self.settings,
                            extra=[Need(v, "configmaps", namespace=ns) for v in ("get", "create", "update")])
        try:
            return file_target(self.deployment, kind, api_client=self.api, settings=self.settings,
                               guard=self.guard, access=access)
        except (FileTargetError, NfdStoreError) as e:
            raise Stop(EXIT_USAGE, "refused", str(e), "unwritable-mount") from e

    def nodes(self, target: Any, args: argparse.Namespace) -> list[str]:
        names = self._call(lambda: target.nodes(args.selector, args.node))
        missing = [n for n in args.node if n not in names]
        if missing:
            raise Stop(EXIT_USAGE, "error", f"{', '.join(missing)}: not among the nodes {target.description} "
                                            "reaches (no such node, or nfd-worker does not run there: its "
                                            "DaemonSet's nodeSelector, affinity or tolerations)", "no-such-node")
        if not names and (args.selector or args.node):
            raise Stop(EXIT_USAGE, "error", f"no node nfd-worker runs on matches {args.selector!r}", "no-nodes")
        return names

    def version(self) -> Any:
        """The NFD version to preview with: the `nfd_version` setting over the detected one (nfd_preview)."""
        from console.nfd_preview import resolve_version

        detected = self.deployment.version
        return resolve_version(getattr(self.settings, "nfd_version", None), str(detected) if detected else None)[0]

    def master_config(self) -> Any:
        """The deployed master's label options, at the version previewed."""
        import dataclasses

        config = self.deployment.master_config()
        return config if config.version == self.version() else dataclasses.replace(config, version=self.version())

    def hooks_run(self) -> bool:
        """Whether this cluster's nfd-worker runs hooks (v0.17+ never; v0.14-v0.16 only with hooksEnabled)."""
        from console.nfd import versions as V

        status = V.hooks_status(self.version())
        enabled = self.deployment.worker_config().hooks_enabled
        return status != "removed" and (enabled is True if status == "disabled-by-default" else enabled is not False)


# -- list -----------------------------------------------------------------------------------------------------


def _list(args: argparse.Namespace) -> tuple[dict[str, Any], str, int]:
    from console.kube.nfdfiles import differences

    ctx = _Ctx(args)
    doc: dict[str, Any] = {"status": "listed", "namespace": ctx.deployment.namespace, "kinds": {}}
    text: list[str] = []
    failed: set[str] = set()
    for kind in [args.kind] if args.kind else list(KINDS):
        mount = ctx.deployment.mounts.get(kind)
        if mount is None or mount.source == "none":
            note = f"nfd-worker mounts nothing at {'source.d' if kind == 'hook' else 'features.d'}"
            if kind == "hook" and not ctx.hooks_run():
                note += f" (NFD {ctx.version()} runs no hooks here)"
            doc["kinds"][kind] = {"target": "", "note": note}
            text.append(f"{kind} files: {note}")
            continue
        target = ctx.target(kind)
        nodes = ctx.nodes(target, args)
        listings = target.list(nodes)
        diffs = differences(listings)
        failed |= {ls.node for ls in listings if ls.error}
        doc["kinds"][kind] = {"target": target.description, "nodes": [ls.as_dict() for ls in listings],
                              "differences": [d.as_dict() for d in diffs]}
        text += _list_text(kind, target.description, listings, diffs)
    code = EXIT_OK
    if failed:
        code = EXIT_FAILED
        doc |= {"status": "failed", "error": "failed", "message": f"could not list {', '.join(sorted(failed))}"}
        text.append(f"error: could not list {', '.join(sorted(failed))}")
    return doc, "\n".join(text), code


def _list_text(kind: str, description: str, listings: Sequence[Any], diffs: Sequence[Any]) -> list[str]:
    import datetime as dt

    out = [f"{kind} files: {description}"]
    rows = [("NODE", "KIND", "NAME", "SIZE", "SHA256", "MODE", "MTIME")]
    for ls in listings:
        for f in ls.files:
            when = dt.datetime.fromtimestamp(f.mtime, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
            rows.append((ls.node, kind, f.name, str(f.size), f.sha256[:12] or "-", f"{f.mode:04o}", when))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    out += [f"  {ls.node}: {ls.error}" for ls in listings if ls.error]
    empty = [ls.node for ls in listings if not ls.files and not ls.error]
    if empty:
        out.append(f"  no files on {', '.join(empty)}")
    if diffs:
        out.append("Differences:")
        for d in diffs:
            parts = [f"{h[:12] or '(unhashed)'} on {', '.join(ns)}" for h, ns in d.by_hash.items()]
            if len(d.by_hash) > 1:
                out.append(f"  {d.name}: different content: " + "; ".join(parts))
            if d.missing_on:
                out.append(f"  {d.name}: missing on {', '.join(d.missing_on)}")
    return out


# -- push / rm ------------------------------------------------------------------------------------------------


def _read_file(path: str) -> str:
    from console.cli_nfd_deploy import _read_file as read_text
    from console.kube.nfdfiles import MAX_FILE_BYTES

    return read_text(path, MAX_FILE_BYTES, "nfd-worker skips larger files (source/local/local.go MaxFeatureFileSize)")


def _labels(ctx: _Ctx, kind: str, name: str, content: str, node: str) -> tuple[dict[str, str], list[str]]:
    """The labels the file gives `node` with this cluster's NFD (console/nfd_preview.preview_file), and notes.
    A feature file gives every node the same; a hook runs (here, with NODE_NAME) once per node."""
    from console.nfd_preview import preview_file

    key = (kind, name, content, node if kind == "hook" else "")
    if key not in ctx.previews:
        ctx.previews[key] = preview_file(kind, name, content, ctx.version(), config=ctx.master_config(),
                                         node_name=node)
    p = ctx.previews[key]
    notes = [*p.warnings, *([p.note] if p.note else []), *(f"dropped {d.key}: {d.reason}" for d in p.dropped)]
    if kind == "hook" and not ctx.hooks_run():
        return {}, [f"NFD {ctx.version()} does not run hooks here (sources.local.hooksEnabled / v0.17+): "
                    "no labels", *notes]
    if p.hook is not None and not p.hook.ok:
        notes.append(f"hook {name} failed here: {p.hook.error}")
    elif kind == "hook" and p.labels:
        notes.append("the hook ran here, on this machine: on the node it reads the node's own files, so its "
                     "values (and the keys it prints) may differ")
    return dict(p.labels), notes


def _old_labels(ctx: _Ctx, target: Any, kind: str, name: str, listings: Sequence[Any]) -> dict[str, set[str]]:
    """node -> label keys the file's current content gives it (read once per distinct content)."""
    by_hash: dict[str, str] = {}
    keys: dict[str, set[str]] = {}
    for ls in listings:
        f = next((f for f in ls.files if f.name == name), None)
        if f is None:
            continue
        if f.sha256 not in by_hash:
            content = ctx._call(lambda node=ls.node: _safe_read(target, node, name))
            by_hash[f.sha256] = content or ""
        keys[ls.node] = set(_labels(ctx, kind, name, by_hash[f.sha256], ls.node)[0]) if by_hash[f.sha256] else set()
    return keys


def _safe_read(target: Any, node: str, name: str) -> str | None:
    from console.kube.nfdfiles import FileTargetError

    try:
        return target.read(node, name).content
    except FileTargetError:
        return None  # the old labels of that node are then not known; the push itself says whether it works


def _node_labels(ctx: _Ctx, nodes: Sequence[str]) -> dict[str, dict[str, str]]:
    from console.kube.nodes_ops import _raw_items

    wanted = set(nodes)
    items = ctx._call(lambda: _raw_items(ctx.api, "/api/v1/nodes"))
    return {n["metadata"]["name"]: dict(n["metadata"].get("labels") or {})
            for n in items if n["metadata"]["name"] in wanted}


def _plan(ctx: _Ctx, target: Any, nodes: Sequence[str], args: argparse.Namespace, name: str, content: str | None
          ) -> tuple[list[dict[str, Any]], dict[str, dict[str, str | None]]]:
    """(per-node plan rows, expected labels per node) for a push (content) or a removal (None)."""
    import hashlib

    from console.kube.nfdfiles import PRESENT

    listings = {ls.node: ls for ls in target.list(nodes)}
    old = _old_labels(ctx, target, args.kind, name, list(listings.values()))
    current = _node_labels(ctx, nodes)
    digest = hashlib.sha256(content.encode()).hexdigest() if content is not None else ""
    rows, expected = [], {}
    for node in nodes:
        ls = listings[node]
        have = next((f for f in ls.files if f.name == name), None)
        if ls.error:
            action = "unknown"
        elif content is None:
            action = "remove" if have else "absent"
        else:
            action = "create" if have is None else "unchanged" if have.sha256 == digest else "replace"
        new, notes = _labels(ctx, args.kind, name, content, node) if content is not None else ({}, [])
        want: dict[str, str | None] = {k: None for k in old.get(node, set()) - set(new)}
        want.update(new)
        now = current.get(node, {})
        change = {k: {"now": now.get(k), "then": v} for k, v in sorted(want.items()) if now.get(k) != v}
        if args.kind == "hook":  # its values on the node are its own: wait for the keys, whatever their value
            want.update(dict.fromkeys(new, PRESENT))
        rows.append({"node": node, "action": action, "now_sha256": have.sha256 if have else "",
                     "version": target.version(ls, name),  # what this node's write must still find there
                     "labels": new, "label_changes": change, "notes": notes, "list_error": ls.error})
        expected[node] = want
    return rows, expected


def _plan_text(target: Any, verb: str, name: str, rows: Sequence[Mapping[str, Any]]) -> str:
    out = [f"{verb} {name}: {target.description}"]
    for r in rows:
        out.append(f"  {r['node']}: {r['action']}" + (f" (cannot list: {r['list_error']})" if r["list_error"] else ""))
        for k, c in r["label_changes"].items():
            out.append(f"    - {k}={c['now']}" if c["then"] is None else
                       f"    + {k}={c['then']}" + (f" (now {c['now']})" if c["now"] is not None else ""))
        if not r["label_changes"]:
            out.append("    labels: no change")
        out += [f"    note: {n}" for n in r["notes"]]
    return "\n".join(out)


def _push(args: argparse.Namespace) -> tuple[dict[str, Any], str, int]:
    from console.kube.nfdfiles import FileTargetError, check_content, check_name

    if args.file == "-" and not args.name:
        raise Stop(EXIT_USAGE, "error", "FILE - (standard input) needs --name NAME: the file's name on the nodes",
                   "usage")
    content = _read_file(args.file)
    name = args.name or os.path.basename(args.file)
    try:
        check_name(name)
        check_content(name, content)
    except FileTargetError as e:
        raise Stop(EXIT_USAGE, "error", str(e), "bad-name") from e
    return _change(args, name, content)


def _rm(args: argparse.Namespace) -> tuple[dict[str, Any], str, int]:
    from console.kube.nfdfiles import FileTargetError, check_name

    try:
        check_name(args.name)
    except FileTargetError as e:
        raise Stop(EXIT_USAGE, "error", str(e), "bad-name") from e
    return _change(args, args.name, None)


def _change(args: argparse.Namespace, name: str, content: str | None) -> tuple[dict[str, Any], str, int]:
    from console.cli_nfd_deploy import _confirm, _refuse_or_stop
    from console.guard import GuardRefusal
    from console.kube.nfdfiles import labels_match

    ctx = _Ctx(args)
    target = ctx.target(args.kind)
    verb = "push" if content is not None else "remove"
    nodes = ctx.nodes(target, args)
    widened: list[str] = []
    if target.mount.source == "configMap":  # one ConfigMap reaches every node nfd-worker runs on, not a choice
        reach = ctx._call(lambda: target.nodes())
        widened = [n for n in reach if n not in nodes]
        nodes = list(reach)
    if not args.dry_run:  # refused before any node is reached (listing them runs node-debug pods)
        try:
            ctx.guard.check(f"{verb} of {args.kind} file {name} on {', '.join(nodes)}")
        except GuardRefusal as e:
            raise _refuse_or_stop(e) from e
    rows, expected = _plan(ctx, target, nodes, args, name, content)
    plan = _plan_text(target, verb.capitalize(), name, rows)
    if widened:
        plan += (f"\nnote: {target.description} is one ConfigMap: the {verb} reaches every node nfd-worker runs on, "
                 f"also {', '.join(widened)}")
    base = {"kind": args.kind, "name": name, "target": target.description, "dry_run": bool(args.dry_run),
            "namespace": ctx.deployment.namespace, "nfd_version": str(ctx.version()), "also_reached": widened}
    todo = [r["node"] for r in rows if r["action"] not in ("unchanged", "absent")]
    if not todo:
        msg = f"nothing to do: {name} is already as asked on {', '.join(nodes)}"
        return {**base, "status": "nothing-to-do", "message": msg, "nodes": rows}, plan + "\n" + msg, EXIT_OK
    if args.dry_run:
        msg = f"dry run: would {verb} {name} on {', '.join(todo)}; nothing was changed"
        return {**base, "status": "dry-run", "message": msg, "nodes": rows}, plan + "\n" + msg, EXIT_OK
    if args.output != "json":
        print(plan, file=sys.stderr)
    _confirm(args, f"{verb.capitalize()} {args.kind} file {name} on {len(todo)} node(s): {', '.join(todo)}?")
    shown = {r["node"]: r["version"] for r in rows}  # what the preview showed: each node's write compares it
    try:
        results = ctx._call(lambda: target.push(name, content, todo, expected=shown) if content is not None
                            else target.remove(name, todo, expected=shown))
    except GuardRefusal as e:
        raise _refuse_or_stop(e) from e
    by_node = {r.node: r for r in results}
    for row in rows:
        r = by_node.get(row["node"])
        row.update({"ok": r.ok, "changed": r.changed, "error": r.error, "conflict": r.conflict} if r else
                   {"ok": True, "changed": False, "error": "", "conflict": False})
    _stop_on_conflict(verb, name, results, {**base, "nodes": rows})
    failed = [r.node for r in results if not r.ok]
    report = [f"  {r.node}: " + (f"FAILED: {r.error}" if not r.ok else "written" if r.changed and content is not None
                                 else "removed" if r.changed else "already so") for r in results]
    text = [f"{verb} {name}:", *report]  # the plan went to stderr before the confirmation
    wait_on = {n: expected[n] for n in todo if n not in failed and expected.get(n)}
    code, status = (EXIT_FAILED, "failed") if failed else (EXIT_OK, "done")
    if wait_on and not args.no_wait:
        seen = _wait(ctx, wait_on, args.output != "json", projected=target.mount.source == "configMap")
        late = [n for n in wait_on if not labels_match(seen.get(n) or {}, wait_on[n])]
        for row in rows:
            if row["node"] in seen:
                row["labels_seen"], row["relabelled"] = seen[row["node"]], row["node"] not in late
        text += [f"  {n}: labels now " + ", ".join(f"{k}={v}" if v is not None else f"{k} absent"
                                                    for k, v in sorted(seen[n].items())) for n in seen]
        if late and not failed:
            code, status = EXIT_NOT_SEEN, "not-relabelled"
            worker = ctx.deployment.worker
            text.append(f"not relabelled in time on {', '.join(late)}: check the logs of nfd-worker on those nodes "
                        f"(DaemonSet {ctx.deployment.namespace}/{worker.name if worker else 'nfd-worker'}) and of "
                        "nfd-master")
    msg = (f"{verb} of {name} failed on {', '.join(failed)}" if failed else
           f"{verb} of {name} done on {', '.join(todo)}")
    text.append(msg if not failed else f"error: {msg}")
    error = {"error": "failed" if failed else "not-relabelled"} if code else {}
    if code == EXIT_NOT_SEEN:
        msg += f"; not relabelled in time on {', '.join(late)}"
    return {**base, "status": status, "message": msg, "nodes": rows, "failed": failed, **error}, "\n".join(text), code


def _stop_on_conflict(verb: str, name: str, results: Sequence[Any], doc: Mapping[str, Any]) -> None:
    """Exit 1 "conflict" when some node's file changed since the preview (left as it is there), naming the nodes
    written and those not: as `nfd apply` ends on a 409, nothing of theirs overwritten."""
    from console.kube.nfdfiles_model import conflicts

    found = conflicts(results)
    if not found:
        return
    done = [r.node for r in results if r.ok]
    msg = (f"{verb} of {name}: changed since the preview on {', '.join(r.node for r in found)}, not overwritten "
           f"({found[0].error.removeprefix('not written: ')})"
           + (f"; done on {', '.join(done)}" if done else "") + "; run the command again to see the new preview")
    stop = Stop(EXIT_FAILED, "error", msg, "conflict")
    stop.extra.update({k: v for k, v in doc.items() if k not in ("status", "message")},
                      conflicts=[r.node for r in found], done=done)  # the plan's fields, as a finished push has
    raise stop


def _wait(ctx: _Ctx, expected: Mapping[str, Mapping[str, str | None]], show: bool, *,
          projected: bool) -> dict[str, Any]:
    from console.kube.nfdfiles import wait_relabel

    timeout = float(ctx.deployment.worker_config().sleep_interval) + WAIT_MARGIN + (PROJECTION_MARGIN if projected
                                                                                   else 0.0)

    def progress(msg: str) -> None:
        if show:
            print(f"waiting for nfd-master (up to {timeout:g}s): {msg}", file=sys.stderr, flush=True)

    return ctx._call(lambda: wait_relabel(ctx.api, expected, timeout=timeout, progress=progress))
