"""`console nfd publish`: labels (and features) as third-party NodeFeature objects, one per node (NFD v0.14+).

    console nfd publish (--node NODE ... | -l SELECTOR) [--namespace NS] [--name NAME]
                        (--label KEY=VALUE ... | --from-file FILE --kind hook|feature) [--dry-run] [--yes] [-o json]
    console nfd publish --delete (--node NODE ... | -l SELECTOR) [--namespace NS] [--name NAME] [--yes] [-o json]

Each chosen node gets the NodeFeature NAME (default `<node>-console`) in NS (default: nfd-master's namespace)
with the label `nfd.node.kubernetes.io/node-name: <node>`, `spec.labels` and `spec.features`, as NFD's
customization guide describes its third-party extension; nfd-master merges it with the node's other
NodeFeatures and the NodeFeatureRules. `--from-file` runs a hook (here, bounded) or reads a feature file as
the cluster's nfd-worker would and publishes its labels and its `local.label` / `local.feature` features.
The preview shows, per node, the object sent and what nfd-master will then change on the node; the
confirmation names the nodes; the report says per node what was done. An object already holding the same
spec is left alone (nothing sent, nothing audited). Updates send the resourceVersion read (409: someone
changed it since; nothing overwritten), deletes carry it as a precondition. Refused before anything is sent:
NFD older than v0.14 (no third-party NodeFeatures), read-only, missing RBAC (create/update/delete
nodefeatures.nfd.k8s-sigs.io in NS), an audit log that cannot be written.

Exit codes (as `nfd apply`):
  0  done, nothing to do, or --dry-run
  1  failed on at least one node (rejected, conflict: see the per-node report; the other nodes were done),
     a hook that does not run cleanly, no such node
  2  usage (bad arguments, file, config, kubeconfig); refused: NFD older than v0.14 or its version unknown,
     read-only, the audit log cannot be written, missing RBAC ("error": "forbidden", "missing": [...])
  5  not confirmed (answered no, or stdin is not a terminal and --yes was not given)
  6  the Kubernetes API could not be used (unreachable, TLS, 401, 403 while reading): nothing was changed
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from console.cli_nfd_deploy import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Stop,
    _confirm,
    _connect,
    _read_file,
    _settings,
    _store_errors,
)


def register(sub: Any) -> None:
    """`publish` under `console nfd`."""
    p = sub.add_parser("publish", help="publish labels as NodeFeature objects, one per node (preview, confirm)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--node", action="append", default=[], metavar="NODE", help="a node (repeat for more)")
    where.add_argument("-l", "--selector", help="nodes by label selector (as kubectl -l)")
    p.add_argument("--namespace", "-n", default="", help="the NodeFeatures' namespace (default: nfd-master's)")
    p.add_argument("--name", default="", help="the NodeFeature's name on every node (default: <node>-console)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--label", action="append", default=[], metavar="KEY=VALUE", type=_key_value,
                      help="a label to publish (repeat for more); unprefixed keys get feature.node.kubernetes.io/")
    what.add_argument("--from-file", metavar="FILE", help="a hook or feature file whose output to publish")
    what.add_argument("--delete", action="store_true", help="delete the NodeFeature of each node")
    p.add_argument("--kind", choices=("hook", "feature"), help="what --from-file is")
    p.add_argument("--dry-run", action="store_true", help="preview only; nothing is sent")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")


def _key_value(value: str) -> str:
    if "=" not in value or value.startswith("="):
        raise argparse.ArgumentTypeError(f"needs KEY=VALUE, not {value!r}")
    return value


def run(args: argparse.Namespace) -> int:
    import json

    try:
        doc, text = _publish(args)
    except Stop as e:
        return e.report("nfd publish", args.output)
    except KeyboardInterrupt:
        from console.cli_nfd_deploy import interrupted

        return interrupted("nfd publish", args.output, "interrupted: `nfd publish --dry-run` shows what each node's "
                           "NodeFeature holds now")
    if args.output == "json":
        print(json.dumps(doc, indent=1, default=str))
        if doc["exit_code"]:  # the one line a failure has on stderr, as with text
            print(f"nfd publish: {doc['message']}", file=sys.stderr)
    else:
        print(text)
    return int(doc["exit_code"])


def _nodes(api: Any, args: argparse.Namespace) -> list[str]:
    if args.node:
        return list(dict.fromkeys(args.node))

    from console.kube import rest

    names = sorted(n["metadata"]["name"] for n in rest.items(api, "/api/v1/nodes", label_selector=args.selector))
    if not names:
        raise Stop(EXIT_FAILED, "failed", f"no node matches -l {args.selector}", "no-nodes")
    return names


def _elements(features: dict[str, Any]) -> bool:
    """Whether a NodeFeature spec's features hold any element (attributes, flags, instances)."""
    return any((f or {}).get("elements") for group in features.values() for f in (group or {}).values())


def _from_file(args: argparse.Namespace) -> str | None:
    """--from-file's text, read before anything is sent or asked of the cluster (a bad file is refused first)."""
    if not args.from_file:
        return None
    if not args.kind:
        raise Stop(EXIT_USAGE, "error", "--from-file needs --kind hook|feature", "usage")
    return _read_file(args.from_file)


def _content(args: argparse.Namespace, version: Any, nodes: list[str], text: str | None
             ) -> tuple[dict[str, tuple[dict[str, str], dict[str, Any]]], list[str]]:
    """node -> (labels, features) to publish, and warnings. A hook runs once per node with that node's
    NODE_NAME (nfd-worker's DaemonSet sets it from spec.nodeName), here, not on the node."""
    if args.delete:
        return {n: ({}, {}) for n in nodes}, []
    if text is not None:
        from pathlib import Path

        from console.kube.nodefeatures import local_file_spec

        content, name = text, Path(args.from_file).name
        out: dict[str, Any] = {}
        warnings: list[str] = []
        for node in nodes if args.kind == "hook" else nodes[:1]:
            try:
                spec = local_file_spec(args.kind, name, content, version, node_name=node)
            except ValueError as e:
                raise Stop(EXIT_FAILED, "failed", str(e), "hook-failed") from e
            if not spec.labels and not _elements(spec.features):  # the local source's feature sets are kept empty
                raise Stop(EXIT_FAILED, "failed", f"{args.from_file} yields no label and no feature",
                           "nothing-to-publish")
            out[node] = (spec.labels, spec.features)
            warnings.extend(w for w in spec.warnings if w not in warnings)
        return {n: out.get(n, out[nodes[0]]) for n in nodes}, warnings
    if not args.label:
        raise Stop(EXIT_USAGE, "error", "give --label KEY=VALUE, --from-file FILE --kind hook|feature, or --delete",
                   "usage")
    labels = dict(item.split("=", 1) for item in args.label)
    from console.nfd.labels import worker_label_check

    bad = [r for k, v in labels.items() if (r := worker_label_check(k, v))]
    if bad:
        raise Stop(EXIT_USAGE, "error", "; ".join(bad), "bad-label")
    return {n: (labels, {}) for n in nodes}, []


def _publish(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    from console.guard import Guard
    from console.kube import nodefeatures as NFS
    from console.kube.access import review
    from console.kube.nfdstore import StoreNotFound

    text = _from_file(args)
    settings = _settings(args)
    guard = Guard.from_settings(settings)
    api = _connect(settings)
    with _store_errors("reading the cluster's NFD", settings):
        try:
            nfd = NFS.cluster_nfd(api, settings)
            NFS.require_third_party(nfd)
        except NFS.PublishRefused as e:
            raise Stop(EXIT_USAGE, "refused", str(e), e.kind) from e
        nodes = _nodes(api, args)
    content, warnings = _content(args, nfd.version, nodes, text)
    with _store_errors("reading NodeFeatures", settings):
        try:
            plans = NFS.plan_publish(api, nfd, nodes, namespace=args.namespace, name=args.name, per_node=content,
                                     delete=args.delete)
        except NFS.PublishRefused as e:
            raise Stop(EXIT_USAGE, "refused", str(e), e.kind) from e
        except StoreNotFound as e:  # a --node that does not exist
            raise Stop(EXIT_FAILED, "failed", str(e), "no-such-node") from e
    for p in plans:
        p.warnings[:0] = warnings
    preview = NFS.preview_text(plans)
    todo = [p for p in plans if p.sends]

    def report(status: str, message: str, code: int = EXIT_OK, **extra: Any) -> tuple[dict[str, Any], str]:
        doc = {"status": status, "message": message, "exit_code": code, "dry_run": bool(args.dry_run),
               "version": str(nfd.version), "nodes": [p.as_dict() for p in plans], **extra}
        return doc, f"{preview}\n{message}"

    if not todo:
        why = "no node has that NodeFeature" if args.delete else "every node's NodeFeature already has this spec"
        return report("nothing-to-do", f"nothing to do: {why}; nothing was sent")
    access = review(api, settings, extra=NFS.publish_needs(todo))
    missing = access.missing(NFS.publish_needs(todo))
    if args.dry_run:
        note = ""
        if missing:
            note = f"; the writes would be refused: {', '.join(map(str, missing))} not allowed (RBAC)"
        extra: dict[str, Any] = {"error": "forbidden", "missing": [str(n) for n in missing]} if missing else {}
        return report("dry-run", f"dry run: {len(todo)} NodeFeature change(s); nothing was sent{note}", **extra)
    targets = ", ".join(p.node for p in todo)
    verb = "delete" if args.delete else "publish"
    with _store_errors(f"{verb} of NodeFeatures", settings):
        guard.check(f"{verb} of NodeFeatures for {targets}")
    if missing:  # before asking: the API server would refuse these writes
        from console.kube.access import MissingPermissions

        refused = MissingPermissions(f"nfd publish{' --delete' if args.delete else ''}", missing, access.user)
        raise Stop(EXIT_USAGE, "refused", str(refused), "forbidden", missing=refused.details()["missing"])
    print(preview, file=sys.stderr)
    _confirm(args, f"{verb.capitalize()} {len(todo)} NodeFeature(s) for node(s) {targets}?")
    with _store_errors(f"{verb} of NodeFeatures", settings):
        NFS.apply_plan(api, plans, guard=guard, access=access, settings=settings)
    failed = [p for p in plans if p.result == "failed"]
    done = [f"{p.node}: {p.result}" for p in plans if p.sends and p.result != "failed"]
    lines = "; ".join([*done, *(f"{p.node}: failed ({p.error})" for p in failed)])
    if failed:
        return report("partial" if done else "failed", f"{lines}; nfd-master relabels the others", EXIT_FAILED,
                      error="failed")
    return report("done", f"{lines}; nfd-master relabels the node(s)")
