"""`console nfd apply`: deploy NodeFeatureRules headless (hooks and feature files: `nfd files`, cli_nfd_files.py).

    console nfd apply -f RULE.yaml [-f ...] [--dry-run] [--yes] [-o json]

`apply` creates each NodeFeatureRule that does not exist and replaces the ones that do, with the
resourceVersion it read (a concurrent change gives a 409 and nothing is overwritten), after validating it
as nfd-master would and a server-side dry-run. It prints a diff first and asks to confirm unless
--yes; identical content is "nothing to do" (nothing written, nothing audited). Every write goes through
the session's Guard (console/guard.py): read-only refuses, and the audit intent is on disk before the write.

Exit codes:
  0  done, nothing to do, or --dry-run
  1  failed: invalid rule (as `nfd validate`), rejected by the API server, or changed by someone else since
     it was read (409 Conflict: nothing was overwritten; run again to see the new diff)
  2  usage: bad file, bad config/kubeconfig; refused: read-only (`--read-only`, `read_only: true`), or the
     audit log cannot be written (nothing changed; or, status "error", the write was made and only its outcome
     record is missing: the message says so); missing RBAC permissions, found before any write (the API server's
     SelfSubjectRulesReview: JSON "error": "forbidden", "missing": ["create nodefeaturerules.nfd.k8s-sigs.io",
     ...]; a --dry-run reports them instead, exit 0)
  5  not confirmed (answered no, or stdin is not a terminal and --yes was not given)
  6  the Kubernetes API could not be used (unreachable, TLS, 401, a 403 met while writing): nothing was changed
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import sys
from collections.abc import Iterator
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_DECLINED, EXIT_BACKEND = 0, 1, 2, 5, 6
MAX_FILE_BYTES = 1024 * 1024  # a ConfigMap's data is at most 1 MiB (Kubernetes MaxSecretSize/ConfigMap limit)


class Stop(Exception):
    """End the command: the exit code, the JSON status and error kind (console/exit_codes.py), the message."""

    def __init__(self, code: int, status: str, message: str, kind: str, **extra: Any) -> None:
        super().__init__(message)
        self.code, self.status, self.kind, self.extra = code, status, kind, extra

    def report(self, command: str, output: str) -> int:
        """The one line on stderr (and, with `-o json`, the error object on stdout); the exit code."""
        from console.exit_codes import print_error

        return print_error(command, output == "json", self.kind, str(self), self.code, status=self.status,
                           **self.extra)


def interrupted(command: str, output: str, message: str) -> int:
    """Ctrl-C in an nfd command (exit 5): the line says what was, or was not, changed."""
    from console.exit_codes import print_error

    return print_error(command, output == "json", "interrupted", message, EXIT_DECLINED, status="interrupted")


def add_parsers(sub: Any) -> None:
    """`apply` under `console nfd`."""
    ap = sub.add_parser("apply", help="create or replace NodeFeatureRule(s) on the cluster (diff, confirm)",
                        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-f", "--filename", dest="rule", required=True, action="append",
                    help="YAML with NodeFeatureRule document(s)")
    _common(ap)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true", help="show the diff (and the server's dry-run) and exit")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    command = f"nfd {args.nfd_command}"
    try:
        doc, text = _apply(args)
    except Stop as e:
        return e.report(command, args.output)
    except KeyboardInterrupt:
        return interrupted(command, args.output, "interrupted before anything was changed")
    if args.output == "json":
        print(json.dumps(doc, indent=1, default=str))
    else:
        print(text)
    return EXIT_OK


# -- shared ---------------------------------------------------------------------------------------------------


def _settings(args: argparse.Namespace) -> Any:
    from console.config import ConfigError
    from console.config import load as load_settings

    try:
        return load_settings({"kubeconfig": args.kubeconfig, "context": args.context,
                              "read_only": getattr(args, "read_only", None),
                              "nfd_version": getattr(args, "nfd_version", None)})
    except ConfigError as e:
        raise Stop(EXIT_USAGE, "error", str(e), "bad-config") from e


def _connect(settings: Any) -> Any:
    from console.kube.connection import KubeConfigError, connect_for
    from console.kube.execauth import ExecPluginError

    try:
        api, _target = connect_for(settings)
    except ExecPluginError:
        raise  # a backend fault (exit 6, kube-exec-plugin), not a bad file
    except KubeConfigError as e:
        raise Stop(EXIT_USAGE, "error", str(e), "bad-kubeconfig") from e
    return api


def _backend_error(e: Exception, what: str, settings: Any) -> Stop:
    """A store error: conflict / rejected / not found → 1; the API unusable (401, 403, 5xx, unreachable) → 6."""
    from console.kube.nfdstore import StoreConflict, StoreForbidden, StoreNotFound, StoreRejected

    if isinstance(e, StoreForbidden):
        return Stop(EXIT_USAGE, "refused", str(e), "forbidden", missing=e.missing)
    if isinstance(e, StoreConflict):
        return Stop(EXIT_FAILED, "error", f"{e}; nothing was overwritten, run the command again to see the "
                                             "new diff", "conflict")
    if isinstance(e, StoreRejected | StoreNotFound):
        return Stop(EXIT_FAILED, "failed", str(e), "rejected")
    from console import faults

    if faults.classify(e) is not None:  # the API unusable under the store's words (discovery, a read): exit 6
        return _unreachable(e, settings)
    status = getattr(e.__cause__, "status", None)
    if status in (401, 403) or (isinstance(status, int) and status >= 500):
        return _unreachable(e, settings)
    return Stop(EXIT_FAILED, "failed", f"{what}: {e}", "failed")


def _unreachable(e: Exception, settings: Any) -> Stop:
    """The Kubernetes API could not be used: worded by console/faults.py (CA, 401, 403, refused, DNS …), exit 6."""
    from console import faults

    fault = faults.classify(e, faults.Where(settings.kubeconfig or "", settings.context or ""))
    if fault is not None:
        return Stop(EXIT_BACKEND, "error", f"{fault.message}; nothing was changed", fault.kind)
    return Stop(EXIT_BACKEND, "error", f"the Kubernetes API cannot be used ({faults.describe(e)}); check the "
                                       "kubeconfig's server, the network and the CA; nothing was changed",
                "kube-unreachable")


def _missing(api: Any, settings: Any, action: str) -> Stop | None:
    """The refusal (exit 2, before any write) when this user may not do `action` (console/kube/access.py);
    None when allowed or when the API server does not say."""
    from console.kube.access import MissingPermissions, require, review

    try:
        require(review(api, settings), action, settings)
    except MissingPermissions as e:
        return Stop(EXIT_USAGE, "refused", str(e), "forbidden", missing=e.details()["missing"])
    return None


def _diff(before: str, after: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=old, tofile=new))


def _confirm(args: argparse.Namespace, question: str) -> None:
    if args.yes:
        return
    if not sys.stdin.isatty():
        raise Stop(EXIT_DECLINED, "not-confirmed", "refusing to change anything without --yes when stdin is not a "
                                                   "terminal; nothing changed", "not-confirmed")
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)  # stdout is for the result (-o json)
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise Stop(EXIT_DECLINED, "not-confirmed", "not confirmed; nothing changed", "not-confirmed")


def _refuse_or_stop(e: Any) -> Stop:
    """A GuardRefusal, exit 2: refused before the write, or (status "error") written but its outcome not audited."""
    return Stop(EXIT_USAGE, "error" if e.done else "refused", str(e), e.kind)


@contextlib.contextmanager
def _store_errors(what: str, settings: Any, applied: list[str] | None = None) -> Iterator[None]:
    """The block's guard refusals, store errors and transport errors as the command's Stop; `applied`: the
    changes made before a refused or failed write (reported with it)."""
    import urllib3

    from console.guard import GuardRefusal
    from console.kube.nfdstore import NfdStoreError

    try:
        yield
    except (GuardRefusal, NfdStoreError) as e:
        stop = _refuse_or_stop(e) if isinstance(e, GuardRefusal) else _backend_error(e, what, settings)
        if applied is not None:
            stop.extra["applied"] = applied
        raise stop from e
    except (urllib3.exceptions.HTTPError, OSError) as e:
        raise _unreachable(e, settings) from e


# -- apply ----------------------------------------------------------------------------------------------------


def _rule_view(obj: dict[str, Any]) -> dict[str, Any]:
    """What `apply` compares and shows of a rule: name, labels, annotations, spec."""
    meta = obj.get("metadata") or {}
    view: dict[str, Any] = {"metadata": {"name": meta.get("name")}}
    for key in ("labels", "annotations"):
        if meta.get(key):
            view["metadata"][key] = meta[key]
    view["spec"] = obj.get("spec")
    return view


def _ordered_like(value: Any, like: Any) -> Any:
    """`value` with its mappings' keys in the order `like` has them (keys `like` lacks after, as they were), down
    through mappings and lists."""
    if isinstance(value, dict) and isinstance(like, dict):
        keys = [k for k in like if k in value] + [k for k in value if k not in like]
        return {k: _ordered_like(value[k], like.get(k)) for k in keys}
    if isinstance(value, list) and isinstance(like, list):
        return [_ordered_like(v, like[i] if i < len(like) else None) for i, v in enumerate(value)]
    return value


def _rule_docs(args: argparse.Namespace, settings: Any) -> list[dict[str, Any]]:
    from console.cli_nfd_docs import OUTPUT_FIELDS, load_docs
    from console.nfd.master import MasterConfig
    from console.nfd.validation import validate_rule_object
    from console.nfd.versions import UnsupportedVersion, parse_version

    try:
        docs = load_docs(args.rule, "NodeFeatureRule")
        config = MasterConfig(version=parse_version(settings.nfd_version))
    except UnsupportedVersion as e:
        raise Stop(EXIT_USAGE, "error", str(e), "unsupported-version") from e
    except ValueError as e:
        raise Stop(EXIT_USAGE, "error", str(e), "bad-file") from e
    errors = []
    for doc in docs:
        name = (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
        if not name:
            errors.append("a NodeFeatureRule needs metadata.name")
            continue
        for issue in validate_rule_object(doc, config.version, config.policy()):
            if issue.severity == "error" and not issue.field.startswith(OUTPUT_FIELDS):
                errors.append(f"NodeFeatureRule {name!r}: {issue}")
    if errors:
        raise Stop(EXIT_FAILED, "invalid", "invalid NodeFeatureRule: " + "; ".join(errors), "invalid-rule")
    return docs


def _apply(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    import yaml

    from console.guard import Guard
    from console.kube.nfdstore import RuleStore, StoreNotFound

    settings = _settings(args)
    docs = _rule_docs(args, settings)
    guard = Guard.from_settings(settings)
    api = _connect(settings)
    store = RuleStore(api, guard=guard)
    plan: list[dict[str, Any]] = []
    with _store_errors("reading NodeFeatureRules", settings):
        for doc in docs:
            name = doc["metadata"]["name"]
            try:
                current: dict[str, Any] | None = store.get(name)
            except StoreNotFound:
                current = None
            new_view, old_view = _rule_view(doc), _rule_view(current) if current else None
            new_text = yaml.safe_dump(new_view, sort_keys=False)
            # the API server answers a custom object with its keys sorted (it keeps them as unstructured JSON):
            # shown in the file's order, the diff is what differs, not where
            old_text = yaml.safe_dump(_ordered_like(old_view, new_view), sort_keys=False) if old_view else ""
            action = "create" if current is None else "unchanged" if old_view == new_view else "replace"
            rv = (current or {}).get("metadata", {}).get("resourceVersion", "")
            plan.append({"name": name, "action": action, "resourceVersion": rv, "obj": doc, "current": current,
                         "diff": "" if action == "unchanged" else _diff(old_text, new_text,
                                                                        f"{name} (cluster)" if current else "/dev/null",
                                                                        f"{name} (file)")})
    changes = [p for p in plan if p["action"] != "unchanged"]

    def report(status: str, message: str) -> tuple[dict[str, Any], str]:
        rules = [{k: p[k] for k in ("name", "action", "resourceVersion", "diff")} for p in plan]
        return {"status": status, "message": message, "exit_code": EXIT_OK, "dry_run": bool(args.dry_run),
                "rules": rules}, message

    if not changes:
        return report("nothing-to-do", f"nothing to do: {', '.join(p['name'] for p in plan)} already as in the file")
    preview = "\n".join(f"{p['action']} NodeFeatureRule {p['name']}"
                        f"{' (resourceVersion ' + p['resourceVersion'] + ')' if p['resourceVersion'] else ''}\n"
                        f"{p['diff']}" for p in changes)
    what = ", ".join(f"{p['action']} of NodeFeatureRule {p['name']}" for p in changes)
    if not args.dry_run:
        with _store_errors(what, settings):
            guard.check(what)  # read-only is the session's: said before RBAC, which could change nothing more
    if (refused := _missing(api, settings, "rule-apply")) is not None:
        if not args.dry_run:
            raise refused
        # a server-side dry-run is authorized as the write itself: the API server would refuse it too
        doc, _ = report("dry-run", f"dry run: {len(changes)} change(s), not checked by the API server: an apply "
                                   f"would be {refused}")
        doc |= {"error": "forbidden", **refused.extra}
        return doc, preview + f"\n{doc['message']}"
    with _store_errors("server-side dry-run", settings):
        for p in changes:  # the server validates (admission, schema) without persisting anything
            if p["action"] == "create":
                store.create(p["obj"], dry_run=True)
            else:
                store.replace(p["obj"], resource_version=p["resourceVersion"], dry_run=True)
    if args.dry_run:
        doc, _ = report("dry-run", f"dry run: {len(changes)} change(s); nothing was changed")
        return doc, preview + f"\ndry run: {len(changes)} change(s); nothing was changed"
    print(preview, file=sys.stderr)
    _confirm(args, f"Apply {len(changes)} NodeFeatureRule change(s)?")
    done: list[str] = []
    with _store_errors("apply", settings, applied=done):
        for p in changes:
            if p["action"] == "create":
                out = store.create(p["obj"])
            else:
                out = store.replace(p["obj"], resource_version=p["resourceVersion"], before=p["current"])
            p["resourceVersion"] = out["metadata"].get("resourceVersion", "")
            done.append(f"{p['action']}d {p['name']}")
    return report("applied", "applied: " + "; ".join(done) + "; nfd-master relabels the nodes")


def _read_file(path: str, max_bytes: int = MAX_FILE_BYTES, why: str = "the most a ConfigMap holds") -> str:
    """A local hook / feature file as UTF-8 text, at most `max_bytes` (`nfd publish`, `nfd files push`)."""
    from console.bounded import InputError, Limits, read_capped

    try:
        data = read_capped(path, Limits(max_bytes=max_bytes, why=why))
    except InputError as e:
        raise Stop(EXIT_USAGE, "error", str(e), "bad-file") from e
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Stop(EXIT_USAGE, "error", f"{path}: not UTF-8 text (byte {e.start})", "bad-file") from e
