"""`console get nodes|pending|node NAME`: the console's main views headless, with the screens' own figures.

    console get nodes [-l SELECTOR] [-o json|wide]    the nodes screen's table
    console get pending [-o json|wide]                the Pending screen: requests, FailedScheduling, fit advice
    console get node NAME [-o json|wide]              the node detail: figures, labels by origin, VM

The figures are computed by the code the screens use, on one list of nodes, pods (and, for pending, the
FailedScheduling events), the usage from metrics.k8s.io where it is served, and the VMs of the cloud and libvirt
URIs the settings name, as in the TUI (`cloud` / $OS_CLOUD, `libvirt_uris` / $CONSOLE_LIBVIRT_URI).
Tables are printed as kubectl prints them (a header row, columns aligned); `-o wide` adds columns; `-o json`
prints the objects. Usage not known (no
metrics-server, not allowed, no metrics for that node) is `<unknown>` in tables, null in JSON — never 0.
VM markers: `*` Nova's flavor is out of date (it differs from what the hypervisor runs), `!` the kubelet is stale
(it reports another size than the VM runs).

`get nodes -o json`: a list of {"name", "roles", "status", "kubeletVersion", "capacity", "allocatable",
"requested" ({"cpu": "4", "memory": "8Gi"}: Kubernetes quantities), "usage" (the same, or null), "pods",
"nfdLabels", "vm" ({"name", "vcpus", "memory", "flavor", "backend", "stale", "markers"} or null)}.

Reads only: list nodes, pods and events (pending), nodes.metrics.k8s.io (optional), NodeFeatures and
NodeFeatureRules (node NAME, optional), and the VM lists of the TUI's VM column.

Exit codes:
  0  shown (an empty result too: it says so on stderr)
  2  usage: a bad label selector (one line saying what is wrong), a bad kubeconfig or config file
  3  get node NAME: no such node
  6  the Kubernetes API could not be used (unreachable, TLS, 401, 403), as every headless command says it
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXIT_OK, EXIT_USAGE, EXIT_NOT_FOUND = 0, 2, 3
OUTPUTS = ("json", "wide")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("get", help="the nodes, Pending pods or one node, as the screens show them",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    kinds = p.add_subparsers(dest="get_kind", metavar="KIND", required=True)
    nodes = kinds.add_parser("nodes", help="the nodes screen's table")
    nodes.add_argument("-l", "--selector", default=None, help="label selector, as kubectl -l (key=value,!key,…)")
    pending = kinds.add_parser("pending", help="Pending pods: requests, why (FailedScheduling), where they would fit")
    node = kinds.add_parser("node", help="one node: figures, labels by origin, VM")
    node.add_argument("name", metavar="NAME")
    for q in (nodes, pending, node):
        q.add_argument("-o", "--output", choices=OUTPUTS, default=None, help="json, or wide (more columns)")


def run(args: argparse.Namespace) -> int:
    from console.config import load
    from console.kube.selector import SelectorError, parse_selector

    selector = None
    if getattr(args, "selector", None) is not None:
        try:
            selector = parse_selector(args.selector)
            if not selector.requirements:
                raise SelectorError("an empty selector: give key, !key, key=value, key!=value or key in (a,b)")
        except SelectorError as e:
            return _error(args, "bad-selector", f"bad label selector {args.selector!r}: {e}", EXIT_USAGE)
    settings = load({"kubeconfig": getattr(args, "kubeconfig", None), "context": getattr(args, "context", None),
                     "nfd_version": getattr(args, "nfd_version", None)})
    from console.kube.connection import connect_for

    api, _target = connect_for(settings)
    try:
        if args.get_kind == "nodes":
            return _nodes(args, api, settings, selector)
        if args.get_kind == "pending":
            return _pending(args, api, settings)
        return _node(args, api, settings)
    finally:
        api.close()


def _error(args: argparse.Namespace, kind: str, message: str, code: int) -> int:
    from console.exit_codes import print_error

    return print_error("console get", args.output == "json", kind, message, code)


def _nodes(args: argparse.Namespace, api: Any, settings: Any, selector: Any) -> int:
    from console.cli_get_data import (
        NODE_HEADERS,
        NODE_HEADERS_WIDE,
        cluster_view,
        legend_line,
        node_cells,
        node_json,
        table,
    )

    view, _metrics = cluster_view(api, settings)
    rows = [r for r in view.rows if selector is None or selector.matches(r.node.labels)]
    if args.output == "json":
        print(json.dumps([node_json(r) for r in rows], indent=1))
        return EXIT_OK
    if not rows:  # as kubectl, on stderr; and which filter matched nothing
        print("No resources found" if selector is None else f"no nodes match -l {args.selector} "
              f"({len(view.rows)} nodes in the cluster)", file=sys.stderr)
        return EXIT_OK
    wide = args.output == "wide"
    print(table(NODE_HEADERS_WIDE if wide else NODE_HEADERS, [node_cells(r, wide) for r in rows]))
    legend_line(rows)
    return EXIT_OK

def _pending(args: argparse.Namespace, api: Any, settings: Any) -> int:
    from console.cli_get_data import cluster_view, failed_scheduling, flavors, pending_fits, pending_json, table
    from console.cli_get_data import pending_cells as cells

    view, _metrics = cluster_view(api, settings, metrics=False)
    latest, why_none = failed_scheduling(api)
    fits = pending_fits(view, latest, flavors(settings) if view.pending else [])
    if args.output == "json":
        print(json.dumps([pending_json(f, why_none) for f in fits], indent=1))
        return EXIT_OK
    if not fits:
        print("No Pending pods", file=sys.stderr)  # the Pending screen's words
        return EXIT_OK
    wide = args.output == "wide"
    headers = ["POD", "CPU", "MEM", "FITS NOW ON", "SCALE UP", "FLAVOR", "WHY (latest FailedScheduling)"] if wide \
        else ["POD", "CPU", "MEM", "ADVICE", "WHY (latest FailedScheduling)"]
    print(table(headers, [cells(f, why_none, wide) for f in fits]))
    return EXIT_OK


def _node(args: argparse.Namespace, api: Any, settings: Any) -> int:
    from console.cli_get_data import cluster_view, node_detail_json, node_detail_text, node_origins

    more = args.output in OUTPUTS  # json and wide add the pods with their usage
    view, metrics = cluster_view(api, settings, pod_metrics=more)
    row = view.rows_by_name.get(args.name)
    if row is None:
        names = sorted(view.rows_by_name)
        listed = ", ".join(names[:10]) + (f", … ({len(names)} nodes)" if len(names) > 10 else "")
        return _error(args, "not-found", f"node {args.name!r} not found; nodes: {listed or 'none'}", EXIT_NOT_FOUND)
    origins, note = node_origins(api, row.node, settings.nfd_version)
    if args.output == "json":
        print(json.dumps(node_detail_json(row, view, metrics, origins, note), indent=1))
    else:
        print("\n".join(node_detail_text(row, view, metrics, origins, note, wide=more)))
    return EXIT_OK
