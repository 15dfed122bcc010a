"""The exit codes and the error kinds of every command: the one list (README "Exit codes", checked by
tests/unit/test_readme.py).

With `-o json` every exit that is not a success prints one JSON object on stdout,
`{"status", "error": KIND, "message", "exit_code"}` (`error_doc`), KIND one of `KINDS`, and the one line
`PREFIX: message` on stderr (`print_error`). A kind names the situation, so a script can act on it; most have
one exit code, a few keep the one each command has always documented for it (`no-nfd`: `nfd status` answers
"not found", 3; `nfd files` refuses, 2; `--from-cluster` fails the preview, 1).

Standard library only: every layer (faults, the guard, the runbooks, the CLI) may import it.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any

OK, FAILED, USAGE, NOT_FOUND, ATTENTION, DECLINED, BACKEND = 0, 1, 2, 3, 4, 5, 6
BUG = 70  # EX_SOFTWARE (sysexits.h): an unexpected exception, the traceback is in the log
SIGINT = 130  # 128 + SIGINT, as a shell reports it: Ctrl-C where no command handles it


@dataclass(frozen=True)
class Kind:
    codes: tuple[int, ...]  # the exit codes it comes with (most: one)
    meaning: str


KINDS: dict[str, Kind] = {
    # 1: failed
    "failed": Kind((FAILED,), "a change failed and was left safe: a scale-up rolled back, a node of a push, publish "
                              "or fleet that failed (the others done), a node that could not be listed"),
    "conflict": Kind((FAILED,), "someone else changed the object or file since it was read (409): nothing was "
                                "overwritten; run the command again to see the new diff"),
    "rejected": Kind((FAILED,), "the API server refused the write (invalid object, not found)"),
    "invalid-rule": Kind((FAILED,), "a NodeFeatureRule is not valid for that NFD version"),
    "evaluation-failed": Kind((FAILED,), "`nfd dryrun`: a rule failed to evaluate (nfd-master would skip it): a "
                              "value, regexp or template the API server accepts but the evaluation refuses"),
    "hook-failed": Kind((FAILED,), "`nfd publish --from-file`: the hook does not run cleanly"),
    "nothing-to-publish": Kind((FAILED,), "`nfd publish --from-file`: the file yields no label and no feature"),
    "lab-failed": Kind((FAILED,), "`console lab`: the embedded lab did not start"),
    "bad-file": Kind((FAILED, USAGE), "a file named on the command line cannot be used: missing, not a regular file, "
                                      "too big, not UTF-8, not YAML, not the expected kind (exit 2; `nfd dryrun`, "
                                      "`nfd validate`: 1, as an invalid rule)"),
    "unsupported-version": Kind((FAILED, USAGE), "an NFD version the console does not model (`--nfd-version`, "
                                                 "`nfd_version`; exit 1 for the previews, 2 for `nfd apply`)"),
    "no-nodes": Kind((FAILED, USAGE), "no node matches the selector (`nfd publish`: 1; `nfd files`: 2)"),
    "no-nfd": Kind((FAILED, USAGE, NOT_FOUND), "no node-feature-discovery in this cluster (`nfd status`: 3; "
                                               "`nfd files`: 2, nothing reads the files; `--from-cluster`: 1)"),
    # 2: usage, or refused before any change
    "usage": Kind((USAGE,), "a command line that cannot be run: an unknown flag, a missing or contradictory "
                            "argument, a bad value"),
    "bad-config": Kind((USAGE,), "the config file or a setting (file, line, key), or an NFD config file given by "
                                 "a flag (`--master-config`, `--worker-config`)"),
    "bad-kubeconfig": Kind((USAGE,), "the kubeconfig cannot be used (unreadable, not a kubeconfig, no such "
                                     "context)"),
    "bad-clouds-yaml": Kind((USAGE,), "clouds.yaml (or the cloud named) cannot be used"),
    "bad-yaml": Kind((USAGE,), "a YAML file that is not valid YAML"),
    "bad-theme": Kind((USAGE,), "the theme named by `--theme` is broken (the message names its file)"),
    "bad-selector": Kind((USAGE,), "a label selector that cannot be parsed"),
    "bad-name": Kind((USAGE,), "`nfd files`: a file name nfd-worker would not read as given, or content it skips"),
    "bad-label": Kind((USAGE,), "`nfd publish --label`: a label nfd-worker would refuse"),
    "bad-pod": Kind((USAGE,), "`plan --pods`: a pod that does not exist or is not waiting for a node"),
    "no-such-node": Kind((FAILED, USAGE), "no such node (`nfd publish`: 1), or one nfd-worker does not run on "
                                          "(`nfd files`: 2)"),
    "unwritable-mount": Kind((USAGE,), "`nfd files`: a source.d / features.d volume the console cannot write"),
    "nfd-too-old": Kind((USAGE,), "`nfd publish`: NFD older than v0.14 reads no third-party NodeFeatures"),
    "no-nodefeature-api": Kind((USAGE,), "`nfd publish`, `nfd dryrun --from-cluster` without `--nodefeature`: "
                                         "the cluster serves no NodeFeature API"),
    "nfd-version-unknown": Kind((USAGE,), "the cluster's NFD version cannot be told: give `--nfd-version`"),
    "read-only": Kind((USAGE,), "read-only (`--read-only`, `read_only: true`): nothing was changed"),
    "audit-unwritable": Kind((USAGE,), "the audit log cannot be written: nothing was changed (or, status "
                                       "\"error\", the change was made and only its outcome record is missing)"),
    "forbidden": Kind((USAGE,), "RBAC permissions missing for the change, found before it (`missing` lists them; "
                                "a `--dry-run` reports them with exit 0)"),
    "refused": Kind((USAGE,), "refused before any change for the reason the message gives"),
    "held": Kind((USAGE,), "the node or the fleet is held by another run (its Lease or its process names the "
                           "holder)"),
    "journal": Kind((USAGE,), "a run's journal cannot be used (the message names the file and the `--discard`)"),
    "run-differs": Kind((USAGE,), "a rerun names another target than the unfinished run it would resume"),
    "plan-refused": Kind((USAGE,), "the scale-up cannot be planned: unknown flavor, not bigger, no VM, pods a "
                                   "drain would delete without `--force` / `--delete-emptydir-data`"),
    "lab-not-installed": Kind((USAGE,), "the embedded lab needs: pip install 'console[lab]'"),
    # 3: not found or not seen
    "not-found": Kind((NOT_FOUND,), "no such node (`get node NAME`, `scale-up NODE`)"),
    "unplaceable": Kind((NOT_FOUND,), "`plan`: Pending pods no plan can place (each with its reason)"),
    "not-relabelled": Kind((NOT_FOUND,), "`nfd files`: written, but the labels were not seen on every node in time"),
    "verify-failed": Kind((NOT_FOUND,), "a scale-up (or fleet) whose verification failed: the VM grew, capacity or "
                                        "pods are not as planned"),
    # 4: needs attention
    "needs-attention": Kind((ATTENTION,), "a run stopped in a state it could not make safe (resumable: "
                                          "`--resume`)"),
    "interrupted": Kind((ATTENTION, DECLINED, SIGINT), "interrupted by Ctrl-C/SIGTERM: a run stopped before its "
                                                       "next step (resumable), 4; `nfd apply|files|publish`, 5 "
                                                       "(what was done is said); where no command handles it, 130"),
    # 5: not confirmed
    "not-confirmed": Kind((DECLINED,), "not confirmed: answered no, interrupted at the question, or stdin is not a "
                                       "terminal and `--yes` was not given; nothing was changed"),
    # 6: a backend could not be used, nothing was changed (console/faults.py)
    "kube-unreachable": Kind((BACKEND,), "the Kubernetes API server cannot be reached"),
    "kube-tls": Kind((BACKEND,), "its certificate is not trusted (the kubeconfig's CA) or not for that name"),
    "kube-unauthorized": Kind((BACKEND,), "401: the API server does not accept these credentials"),
    "kube-forbidden": Kind((BACKEND,), "403: RBAC does not allow a read or a call met while running (`missing` "
                                       "when known)"),
    "kube-exec-plugin": Kind((BACKEND,), "the kubeconfig's exec credential plugin failed or needs a terminal"),
    "keystone-auth": Kind((BACKEND,), "Keystone rejected the user, password or project"),
    "keystone-unreachable": Kind((BACKEND,), "Keystone cannot be reached"),
    "openstack-unreachable": Kind((BACKEND,), "an OpenStack service of the catalog (Nova) cannot be reached"),
    "openstack-forbidden": Kind((BACKEND,), "OpenStack refused the request (403)"),
    "libvirt-unreachable": Kind((BACKEND,), "a libvirt URI cannot be connected to"),
    "libvirt-auth": Kind((BACKEND,), "libvirt refused the authentication"),
    # 70: a bug
    "bug": Kind((BUG,), "a bug: one line saying so, the traceback is in `$XDG_STATE_HOME/console/console.log`"),
}

# the exit codes and what each means (README "Exit codes" rows)
EXIT_CODES: dict[int, str] = {
    OK: "done, nothing to do, or a dry run",
    FAILED: "failed",
    USAGE: "usage, or refused before any change",
    NOT_FOUND: "not found or not seen",
    ATTENTION: "needs attention, or interrupted",
    DECLINED: "not confirmed",
    BACKEND: "a backend could not be used, nothing was changed",
    BUG: "a bug",
    SIGINT: "interrupted where no command handles Ctrl-C",
}

# a run's status (console/runbook: RunResult, FleetResult) → its kind, when it ends with an exit code other than 0
STATUS_KINDS = {"failed": "failed", "verify-failed": "verify-failed", "needs-attention": "needs-attention",
                "interrupted": "interrupted", "refused": "refused", "partial": "failed"}


def kind_of(exc: BaseException, default: str = "refused") -> str:
    """The kind a refusal carries in its `details` ({"error": KIND, ...}: SessionError, FleetError, LockError), else
    `default`."""
    details = getattr(exc, "details", None)
    kind = details.get("error") if isinstance(details, dict) else None
    return kind if isinstance(kind, str) and kind in KINDS else default


def result_kind(status: str, refusal: str = "") -> str:
    """The kind of a run's result that is not a success (RunResult, FleetResult: its status, or the Guard's kind
    that refused it)."""
    return refusal or STATUS_KINDS.get(status, "failed")


def kinds_of(code: int) -> list[str]:
    """The kinds that come with exit code `code`, in the list's order."""
    return [k for k, v in KINDS.items() if code in v.codes]


def error_doc(kind: str, message: str, code: int, /, *, status: str = "error", **extra: Any) -> dict[str, Any]:
    """The `-o json` object of an exit that is not a success; `extra` adds facts (`missing`, `journal`, a file's
    `kind`, …) and cannot replace the four keys."""
    return {**extra, "status": status, "error": kind, "message": message, "exit_code": code}


def print_error(prefix: str, as_json: bool, kind: str, message: str, code: int, /, *, status: str = "error",
                **extra: Any) -> int:
    """The one line `PREFIX: message` on stderr and, with -o json, the error object on stdout; the exit code."""
    print(f"{prefix}: {message}", file=sys.stderr, flush=True)
    if as_json:
        print_json(error_doc(kind, message, code, status=status, **extra))
    return code


def print_json(doc: Any, indent: int | None = None) -> None:
    """The one JSON document on stdout; a reader gone (`-o json | head -c1`) ends quietly, the exit code still
    says what happened."""
    try:
        print(json.dumps(doc, indent=indent, default=str), flush=True)
    except BrokenPipeError:
        stdout_closed()


def stdout_closed() -> None:
    """The reader of stdout went away (`console ... | head`): point stdout at /dev/null so the interpreter's
    final flush does not fail either (https://docs.python.org/3/library/signal.html#note-on-sigpipe)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def kinds_markdown() -> str:
    """The README's table of error kinds (between its `error-kinds` markers)."""
    rows = ["| `error` | exit | meaning |", "|---|---|---|"]
    rows += [f"| `{k}` | {', '.join(map(str, v.codes))} | {v.meaning} |" for k, v in KINDS.items()]
    return "\n".join(rows) + "\n"
