"""`console nfd status [-o json]`: how this cluster runs NFD (console/kube/nfddiscovery.py).

    console nfd status [--context CTX] [-o json]

Prints the one-line status the hooks and rules screens show, then the nfd-master and nfd-worker workloads
(kind, namespace/name, image, args, where their config file comes from), what the master's flags and config
file add up to, where source.d / features.d come from, and whether the NodeFeature API is in use. `-o json`:
{"status": "ok", "statusLine", "namespace", "version", "versionSource", "master": {"image", "args", "config", ...,
"effective": {...}}, "worker": {...}, "nodeFeatureAPI", "mounts": {"hook": {...}, "feature": {...}}, "warnings"}.

Exit codes:
  0  NFD found (warnings, e.g. a namespace or ConfigMap this user may not read, are printed and kept in JSON)
  3  no NFD in this cluster: no Deployment or DaemonSet runs nfd-master or nfd-worker (JSON "status": "not-found");
     the console's previews still work on local files (`nfd local`, `nfd dryrun`)
  6  the Kubernetes API could not be used (unreachable, TLS, 401, 403), as every headless command says it
     (console/faults.py); a 403 on the lists names the missing permissions (JSON "error": "kube-forbidden",
     "missing")
  2  a bad kubeconfig or config file
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from console.exit_codes import print_error

EXIT_OK, EXIT_NOT_FOUND, EXIT_BACKEND = 0, 3, 6
NOT_FOUND = ("no NFD in this cluster: no Deployment or DaemonSet in any namespace runs nfd-master or nfd-worker. "
             "The console still previews what NFD would do on local files: `console nfd local --features-dir DIR "
             "[--hooks-dir DIR]` for feature files and hooks, `console nfd dryrun -f RULE.yaml -n NODEFEATURE.yaml` "
             "for NodeFeatureRules (choose the version with --nfd-version)")


def register(sub: Any) -> None:
    p = sub.add_parser("status", help="how this cluster runs NFD: namespace, version, master/worker flags and config",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    from console.config import load
    from console.kube.connection import connect_for
    from console.kube.nfddiscovery import NfdDiscoveryError, discover_nfd

    # the context as every command resolves it: --context, CONSOLE_CONTEXT, the config file, the kubeconfig's
    settings = load({"kubeconfig": getattr(args, "kubeconfig", None), "context": getattr(args, "context", None)})
    api, _target = connect_for(settings)
    try:
        found = discover_nfd(api)
    except NfdDiscoveryError as e:
        return _failed(args, e)
    finally:
        api.close()
    if found is None:
        return print_error("nfd status", args.output == "json", "no-nfd", NOT_FOUND, EXIT_NOT_FOUND,
                           status="not-found")
    if args.output == "json":
        print(json.dumps({"status": "ok", **found.as_dict()}, indent=1, sort_keys=True, default=str))
    else:
        print("\n".join(describe(found)))
    for w in found.warnings:
        print(f"warning: {w}", file=sys.stderr)
    return EXIT_OK


def _failed(args: argparse.Namespace, e: Exception) -> int:
    """A backend fault (console/faults.py's words when it classifies the cause), exit 6; a 403 names what is missing."""
    kind, message, extra = discovery_failed(e, getattr(args, "kubeconfig", None) or "",
                                            getattr(args, "context", None) or "")
    return print_error("nfd status", args.output == "json", kind, message, EXIT_BACKEND, **extra)


def discovery_failed(e: Exception, kubeconfig: str | None, context: str | None) -> tuple[str, str, dict[str, Any]]:
    """(kind, message, extra) of an NfdDiscoveryError, exit 6 wherever discovery runs (`nfd status`, `nfd files`,
    `--from-cluster`): a 403 on the lists is `kube-forbidden` naming the permissions (`missing`); a fault of the
    call discovery was making is console/faults.py's kind and words."""
    from console import faults

    missing = list(getattr(e, "missing", ()) or ())
    if missing:
        return "kube-forbidden", str(e), {"missing": missing}
    fault = faults.classify(e, faults.Where(kubeconfig or "", context or ""))
    if fault is None:
        return "kube-unreachable", f"cannot find NFD: {faults.describe(e)}", {}
    return fault.kind, f"cannot find NFD ({getattr(e, 'what', '') or 'discovery'}): {fault.message}", {}


def describe(d: Any) -> list[str]:
    """The text report: the status line, then the workloads, the effective settings, mounts and the API."""
    out = [d.status_line(), f"version: {d.version or 'unknown'} ({d.version_source or 'not found'})"]
    for role, w in (("master", d.master), ("worker", d.worker)):
        if w is None:
            out.append(f"nfd-{role}: not found")
            continue
        out.append(f"nfd-{role}: {w.kind} {w.namespace}/{w.name} container {w.container}")
        out.append(f"  image:  {w.image}")
        out.append(f"  args:   {' '.join(w.args) if w.args else '(none)'}")
        out.append(f"  config: {w.config_source or 'none (defaults)'}")
    if d.master is not None:
        c = d.master_config()
        out.append("master settings: extraLabelNs=" + (",".join(sorted(c.extra_label_ns)) or "-")
                   + " denyLabelNs=" + (",".join(sorted(c.deny_label_ns)) or "-")
                   + f" labelWhiteList={c.label_whitelist or '-'}"
                   + " resourceLabels=" + (",".join(sorted(c.resource_labels)) or "-")
                   + f" enableTaints={str(c.enable_taints).lower()}")
    if d.worker is not None:
        w = d.worker_config()
        from console.nfd.versions import hooks_status

        hooks = "removed" if hooks_status(d.model_version) == "removed" else "on" if d.hooks_enabled() else "off"
        out.append(f"worker settings: sleepInterval={w.sleep_interval:g}s hooks={hooks}"
                   f" labelWhiteList={w.label_whitelist or '-'} labelSources="
                   + (",".join(w.sources) if w.sources else "all"))
    for kind, m in d.mounts.items():
        out.append(f"{'source.d' if kind == 'hook' else 'features.d'}: {m.describe()}")
    out.append("NodeFeature API: " + ("in use" if d.node_feature_api else "not in use"))
    return out
