"""`console nfd ...`: NodeFeatureRule dry-runs, local-source previews, validation, host discovery.

Exit codes: 0 ok; 1 invalid rule / evaluation failed, or `--from-cluster` found no NFD; 2 usage (e.g.
`--hook-timeout nan`, an invalid `--label-whitelist` regexp, a bad `--master-config` / `--worker-config`;
JSON with -o json); 6 `--from-cluster` could not reach the cluster; 4 `nfd local` interrupted by
SIGINT/SIGTERM (the running hook's whole process tree is killed first). `apply` (deploying rules, with its own
exit codes) is in cli_nfd_deploy.py, `files` (hooks and feature files on the nodes) in cli_nfd_files.py,
`status` (how the cluster runs NFD; 3 = no NFD) in cli_nfd_status.py, `publish` in cli_nfd_publish.py.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from console.cli_nfd_docs import OUTPUT_FIELDS, load_docs


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("nfd", help="node-feature-discovery previews (rules, feature files, hooks)",
                              description="Preview what node-feature-discovery would do, per NFD version.")
    sub = p.add_subparsers(dest="nfd_command", metavar="ACTION", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        from console.cli_nfd_flags import add_master_flags

        sp.add_argument("--nfd-version", default=None, help="NFD version to model (default: current, v0.19.0)")
        add_master_flags(sp, _go_regexp)

    d = sub.add_parser("dryrun", help="evaluate NodeFeatureRules against NodeFeature objects")
    d.add_argument("--rule", "-f", required=True, action="append", help="YAML with NodeFeatureRule document(s)")
    d.add_argument("--nodefeature", "-n", action="append",
                   help="YAML with NodeFeature document(s) of one node (with --from-cluster and without this: "
                        "every node's NodeFeatures in the cluster)")
    d.add_argument("-o", "--output", choices=("text", "json"), default="text")
    common(d)

    lo = sub.add_parser("local", help="labels from feature files (features.d) and hooks (source.d)")
    lo.add_argument("--features-dir", required=True)
    lo.add_argument("--hooks-dir")
    lo.add_argument("--hooks-enabled", choices=("true", "false"), default=None,
                    help="sources.local.hooksEnabled (v0.12-v0.16; default: the version's default)")
    lo.add_argument("--hook-timeout", type=_positive_seconds, default=10.0,
                    help="seconds per hook, positive and finite (NFD itself has none)")
    lo.add_argument("--hook-max-output", type=_positive_bytes, default=1024 * 1024,
                    help="stdout bytes per hook, positive (NFD itself has no limit)")
    lo.add_argument("--hook-env", action="append", default=[], metavar="KEY=VALUE", type=_key_value,
                    help="extra hook environment")
    lo.add_argument("-o", "--output", choices=("text", "json"), default="text")
    common(lo)
    from console.cli_nfd_flags import add_worker_flags

    add_worker_flags(lo)

    va = sub.add_parser("validate", help="validate NodeFeatureRule file(s)")
    va.add_argument("-f", "--rule", required=True, action="append")
    va.add_argument("-o", "--output", choices=("text", "json"), default="text")
    common(va)

    di = sub.add_parser("discover", help="this host's features in NFD's model")
    di.add_argument("--root", default="/", help="filesystem root holding proc/ sys/ etc/ (or host-proc/ host-sys/)")
    di.add_argument("--node-name", default=None)
    di.add_argument("-o", "--output", choices=("labels", "json", "nodefeature"), default="labels")

    from console import cli_nfd_deploy, cli_nfd_files

    cli_nfd_deploy.add_parsers(sub)  # apply: the cluster-changing commands, in their own modules
    cli_nfd_files.add_parser(sub)
    from console import cli_nfd_status

    cli_nfd_status.register(sub)  # status: how the cluster runs NFD
    from console import cli_nfd_publish

    cli_nfd_publish.register(sub)


def _positive_seconds(value: str) -> float:
    """A timeout: a positive, finite number (`nan`, `inf`, `0`, `-1` would remove or break the only bound)."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, not {value!r}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive, finite number of seconds, not {value!r}")
    return seconds


def _positive_bytes(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of bytes, not {value!r}") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of bytes, not {value!r}")
    return n


def _key_value(value: str) -> str:
    if "=" not in value or value.startswith("="):
        raise argparse.ArgumentTypeError(f"needs KEY=VALUE, not {value!r}")
    return value


def _go_regexp(value: str) -> str:
    """A Go (RE2) regexp, checked when the flags are parsed, as nfd-master's flag.Value does (usage error, 2)."""
    from console.nfd.regex import RegexpError, compile_regexp

    try:
        compile_regexp(value)
    except RegexpError as exc:
        raise argparse.ArgumentTypeError(f"invalid value {value!r}: {exc.describe()}") from None
    return value


def _fail(args: argparse.Namespace, kind: str, msg: str) -> int:
    """Exit 1 (an invalid rule or input: the previews' contract) with one `error: …` on stderr and, with -o json,
    the error object."""
    from console.exit_codes import FAILED, print_error

    return print_error("error", getattr(args, "output", "") == "json", kind, msg, FAILED)


def _input_kind(exc: ValueError) -> str:
    """The error kind of what a preview could not take (console/exit_codes.py)."""
    from console.nfd.rules import RuleError
    from console.nfd.versions import UnsupportedVersion

    if isinstance(exc, UnsupportedVersion):
        return "unsupported-version"
    return "invalid-rule" if isinstance(exc, RuleError) else "bad-file"


def _setup(args: argparse.Namespace, worker_side: bool = False) -> Any:
    """The master and worker configuration to preview with (defaults, --from-cluster, files, flags)."""
    from console.cli_nfd_flags import resolve

    return resolve(args, worker_side=worker_side)


def run(args: argparse.Namespace) -> int:
    if args.nfd_command == "apply":
        from console import cli_nfd_deploy

        return cli_nfd_deploy.run(args)
    if args.nfd_command == "status":
        from console import cli_nfd_status

        return cli_nfd_status.run(args)
    if args.nfd_command == "publish":
        from console import cli_nfd_publish

        return cli_nfd_publish.run(args)
    if args.nfd_command == "files":
        from console import cli_nfd_files

        return cli_nfd_files.run(args)
    from console.cli_nfd_flags import FlagStop

    handlers = {"dryrun": _dryrun, "local": _local, "validate": _validate, "discover": _discover}
    try:
        return handlers[args.nfd_command](args)
    except FlagStop as stop:
        return stop.report(args.nfd_command, getattr(args, "output", "text"))
    except ValueError as exc:  # a bad file, rule or version (UnsupportedVersion, RuleError, InputError)
        return _fail(args, _input_kind(exc), str(exc))


def _dryrun(args: argparse.Namespace) -> int:
    from console.cli_nfd_flags import describe
    from console.nfd.master import compute_node_outcome
    from console.nfd.rules import compile_rule_objects, object_name
    from console.nfd.validation import validate_rule_object

    if not args.nodefeature and not args.from_cluster:
        from console.cli_nfd_flags import EXIT_USAGE, FlagStop

        raise FlagStop(EXIT_USAGE, "usage", "the following arguments are required: --nodefeature/-n (or "
                       "--from-cluster, for every node's NodeFeatures)")
    setup = _setup(args)
    config = setup.config
    rule_docs = load_docs(args.rule, "NodeFeatureRule")
    nf_docs = load_docs(args.nodefeature, "NodeFeature") if args.nodefeature else None
    errors, notes = [], []
    for doc in rule_docs:
        for issue in validate_rule_object(doc, config.version, config.policy()):
            line = f"NodeFeatureRule {object_name(doc)!r}: {issue}"
            # what the master meets only when it evaluates the rule is evaluated here too, as `kubectl nfd dryrun`
            # does (pkg/kubectl-nfd/dryrun.go executes each rule unvalidated): a failing rule is reported alone,
            # and a template without matchers never runs (pkg/apis/nfd/nodefeaturerule/rule.go Execute)
            if issue.severity == "error" and not issue.evaluated and not issue.field.startswith(OUTPUT_FIELDS):
                errors.append(line)
            else:
                notes.append(line)
    if errors:
        return _fail(args, "invalid-rule", "invalid NodeFeatureRule:\n  " + "\n  ".join(errors))
    compiled = compile_rule_objects(rule_docs, config.version)
    if nf_docs is None:
        return _dryrun_cluster(args, setup, compiled, notes)
    outcome = compute_node_outcome(nf_docs, compiled, config=config)
    result = outcome.raw.as_dict()
    result.update({
        "node_labels": outcome.labels,
        "node_annotations": outcome.annotations,
        "node_extendedResources": outcome.extended_resources,
        "node_taints": [t.as_dict() for t in outcome.taints],
        "rules": [r.as_dict() for r in outcome.rule_results],
        "dropped": [d.as_dict() for d in outcome.dropped],
        "warnings": outcome.warnings + notes,
        "nfd_version": str(config.version),
        "master": describe(config),
        "config_source": setup.source,
    })
    msgs = [f"rule {r.rule!r} in NodeFeatureRule {r.object!r}: {r.error}" for r in outcome.rule_errors]
    return _report(args, result, notes, msgs, _print_dryrun)


def _report(args: argparse.Namespace, result: dict[str, Any], notes: list[str], errors: list[str],
            text: Callable[[dict[str, Any]], None]) -> int:
    """A dryrun's result on stdout (JSON or `text`), its notes and evaluation errors on stderr: exit 1 when a
    rule failed to evaluate (nfd-master skips it), else 0."""
    failed = "evaluation failed (nfd-master would skip these rules):\n  " + "\n  ".join(errors) if errors else ""
    result |= {"status": "failed", "error": "evaluation-failed", "message": failed, "exit_code": 1} if failed \
        else {"status": "ok", "exit_code": 0}
    if args.output == "json":
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        text(result)
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    if failed:
        print(f"error: {failed}", file=sys.stderr)
        return 1
    return 0


def _dryrun_cluster(args: argparse.Namespace, setup: Any, compiled: list[Any], notes: list[str]) -> int:
    """The rules against every node's NodeFeatures in the cluster, as nfd-master evaluates them node by node:
    which nodes they match, and each node's labels, extended resources and taints as nfd-master writes them."""
    from console.cli_nfd_flags import cluster_node_features, describe
    from console.nfd.master import compute_node_outcome

    config = setup.config
    nodes, by_node = cluster_node_features(args)
    per_node: dict[str, Any] = {}
    matched, errors = [], []
    for name in sorted(nodes):
        outcome = compute_node_outcome(by_node.get(name, []), compiled, config=config, node=nodes[name])
        rules = [r.as_dict() for r in outcome.rule_results]
        hit = [f"{r['object']}/{r['rule']}" for r in rules if r["matched"] and not r["error"]]
        if hit:
            matched.append(name)
        errors += [f"{name}: rule {r.rule!r} in NodeFeatureRule {r.object!r}: {r.error}" for r in outcome.rule_errors]
        per_node[name] = {
            "matched_rules": hit,
            "rule_labels": {k: outcome.labels[k] for k in outcome.rule_label_origins if k in outcome.labels},
            "node_labels": outcome.labels,
            "node_extendedResources": outcome.extended_resources,
            "node_taints": [t.as_dict() for t in outcome.taints],
            "dropped": [d.as_dict() for d in outcome.dropped],
            "node_features": len(by_node.get(name, [])),
        }
    result: dict[str, Any] = {
        "nodes": per_node, "matched_nodes": matched, "warnings": notes, "nfd_version": str(config.version),
        "master": describe(config), "config_source": setup.source,
    }

    def text(r: dict[str, Any]) -> None:
        out = [f"NFD {r['nfd_version']} ({r['config_source']}): {len(matched)} of {len(nodes)} nodes matched"]
        for name, row in per_node.items():
            labels = ", ".join(f"{k}={v}" for k, v in sorted(row["rule_labels"].items())) or "no rule labels"
            state = f"matched {', '.join(row['matched_rules'])}: {labels}" if row["matched_rules"] else "no match"
            out.append(f"  {name}: {state}" + ("" if row["node_features"] else " (no NodeFeature)"))
        print("\n".join(out))

    return _report(args, result, notes, errors, text)


def _kv(title: str, m: Mapping[str, str]) -> list[str]:
    lines = [f"{title}:"]
    lines += [f"  {k}={v}" for k, v in sorted(m.items())] or ["  (none)"]
    return lines


def _print_dryrun(r: Mapping[str, Any]) -> None:
    out = [f"NFD {r['nfd_version']} ({r['config_source']})", "Rules:"]
    for rr in r["rules"]:
        state = "ERROR " + rr["error"] if rr["error"] else ("matched" if rr["matched"] else "no match")
        out.append(f"  {rr['object']}/{rr['rule']}: {state}")
    out += _kv("Rule labels (raw)", r["labels"]) + _kv("Vars", r["vars"])
    out += _kv("Annotations (raw)", r["annotations"]) + _kv("Extended resources (raw)", r["extendedResources"])
    out.append("Taints (raw):")
    out += [f"  {t['key']}={t.get('value', '')}:{t['effect']}" for t in r["taints"]] or ["  (none)"]
    out += _kv("Node labels (as nfd-master writes them)", r["node_labels"])
    if r["node_extendedResources"]:
        out += _kv("Node extended resources", r["node_extendedResources"])
    if r["node_taints"]:
        out.append("Node taints:")
        out += [f"  {t['key']}={t.get('value', '')}:{t['effect']}" for t in r["node_taints"]]
    if r["dropped"]:
        out.append("Dropped:")
        out += [f"  {d['key']}={d['value']}: {d['reason']}" for d in r["dropped"]]
    out += [f"warning: {w}" for w in r["warnings"]]
    print("\n".join(out))


def _local(args: argparse.Namespace) -> int:
    from console.cli_nfd_flags import describe
    from console.nfd.local import local_source

    setup = _setup(args, worker_side=True)
    env = None
    if args.hook_env:
        import os

        env = dict(os.environ)
        for item in args.hook_env:
            k, _, v = item.partition("=")  # checked by _key_value
            env[k] = v
    enabled = None if args.hooks_enabled is None else args.hooks_enabled == "true"
    try:
        with _signals_raise():
            res = local_source(args.features_dir, args.hooks_dir, config=setup.config, hooks_enabled=enabled,
                               hook_timeout=args.hook_timeout, hook_max_output=args.hook_max_output, hook_env=env,
                               worker=setup.worker)
    except _Signalled as sig:
        # run_hook killed the running hook's whole process tree before this propagated
        msg = (f"interrupted by {signal.Signals(sig.signum).name}: the running hook and every process it started "
               "were killed; no labels computed")
        from console.exit_codes import ATTENTION, print_error

        return print_error("nfd local", args.output == "json", "interrupted", msg, ATTENTION, status="interrupted")
    if args.output == "json":
        doc = res.as_dict() | {"master": describe(setup.config), "config_source": setup.source}
        print(json.dumps(doc, indent=2, sort_keys=True))
        return 0
    out = [f"NFD {res.version} ({setup.source})", *_kv("Node labels", res.labels)]
    if res.extended_resources:
        out += _kv("Node extended resources", res.extended_resources)
    for fname, elems in res.features.items():
        out += _kv(f"Feature {fname}", elems)
    if res.hooks:
        out.append("Hooks:")
        for h in res.hooks:
            out.append(f"  {h.name}: " + (h.error or f"ok, exit 0, {len(h.labels)} key(s)"))
            out += [f"    stderr: {line}" for line in h.stderr.splitlines()[:20]]
    out += [f"warning: {w}" for w in res.warnings]
    print("\n".join(out))
    return 0


class _Signalled(BaseException):  # like KeyboardInterrupt: cuts the hook wait, not caught as an error
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _signals_raise:
    """SIGINT/SIGTERM raise _Signalled in the main thread for the block (once: a second one is ignored)."""

    def __enter__(self) -> None:
        self.old: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            self.old = {s: signal.signal(s, self._raise) for s in (signal.SIGINT, signal.SIGTERM)}

    def _raise(self, signum: int, _frame: Any) -> None:
        for s in self.old:
            signal.signal(s, signal.SIG_IGN)
        raise _Signalled(signum)

    def __exit__(self, *_exc: object) -> None:
        for s, h in self.old.items():
            signal.signal(s, h)


def _validate(args: argparse.Namespace) -> int:
    from console.nfd.rules import object_name
    from console.nfd.validation import validate_rule_object

    config = _setup(args).config
    docs = load_docs(args.rule, "NodeFeatureRule")
    report: list[dict[str, Any]] = []
    bad = False
    for doc in docs:
        name = object_name(doc) or None
        issues = validate_rule_object(doc, config.version, config.policy())
        errs = [i for i in issues if i.severity == "error"]
        bad = bad or bool(errs)
        report.append({"name": name, "valid": not errs, "issues": [i.__dict__ for i in issues]})
    if args.output == "json":
        names = ", ".join(repr(r["name"]) for r in report if not r["valid"])
        verdict = ({"status": "invalid", "error": "invalid-rule", "exit_code": 1,
                    "message": f"NodeFeatureRule {names} not valid for NFD {config.version}"} if bad
                   else {"status": "valid", "exit_code": 0})
        print(json.dumps({**verdict, "nfd_version": str(config.version), "objects": report}, indent=2))
        if bad:
            print(f"error: {verdict['message']}", file=sys.stderr)
    else:
        for r in report:
            for i in r["issues"]:
                stream = sys.stderr if i["severity"] == "error" else sys.stdout
                print(f"{i['severity']}: rule {i['rule']!r}: {i['field']}: {i['message']}", file=stream)
            print(f"NodeFeatureRule {r['name']!r} is {'valid' if r['valid'] else 'not valid'} for NFD {config.version}")
    return 1 if bad else 0


def _discover(args: argparse.Namespace) -> int:
    from console.discovery import discover, discovery_labels
    from console.nfd.model import make_node_feature

    found = discover(args.root)
    if args.output == "labels":
        for k, v in sorted(discovery_labels(found).items()):
            print(f"{k}={v}")
    elif args.output == "json":
        print(json.dumps({"features": found.features.to_api(), "labels": discovery_labels(found),
                          "warnings": found.warnings}, indent=2, sort_keys=True))
    else:
        import socket

        import yaml

        node = args.node_name or found.node_name or socket.gethostname()
        print(yaml.safe_dump(make_node_feature(node, found.features, discovery_labels(found)), sort_keys=False))
    return 0
