"""The JSON-for-every-exit matrix (issue 20 point 7): every command of `console --help`, every error kind of
console/exit_codes.py, with `-o json`.

The commands are read from the parser itself (`invocations()`: each leaf command, and the modes of `scale-up`
and `plan`), so a new command without cases fails tests/unit/test_json_exits.py's coverage test. Each `Case` is
one run of the real CLI in a subprocess: where it needs no server (OFFLINE, tests/unit/test_json_exits.py), or
against the lab's real servers (LAB_DEFAULT: the `default` scenario, LAB_SCALE: `scale`, no NFD workloads, and
LAB_OLD_NFD: `seed-drain`, NFD v0.8.2 — tests/integration/faults/test_json_exits_lab.py). `check` is the
contract: exactly one JSON document on stdout; for an exit other than 0 an object with `status`, `error` (a kind of
the list, documented with that exit code), `message` and `exit_code` (the process's), the message's first line on
stderr, never a traceback.

Kinds no case triggers are in `NOT_TRIGGERED` with the reason and the test that covers their path instead.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from dataclasses import dataclass, field
from typing import Any

from console.exit_codes import KINDS

# modes: flags that make a command another command (README's table lists them apart)
MODES: dict[tuple[str, ...], tuple[str, ...]] = {("scale-up",): ("--dry-run", "--resume", "--revert", "--discard"),
                                                 ("plan",): ("--apply",)}


def commands(parser: argparse.ArgumentParser | None = None) -> list[tuple[str, ...]]:
    """Every leaf command of the console's parser: ("get", "nodes"), ("nfd", "files", "push"), ("lab",), …"""
    if parser is None:
        from console.cli import build_parser

        parser = build_parser()
    out: list[tuple[str, ...]] = []

    def walk(p: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs and path:
            out.append(path)
        for action in subs:
            for name, child in action.choices.items():
                walk(child, (*path, name))

    walk(parser, ())
    return out


def invocations() -> list[tuple[tuple[str, ...], str]]:
    """(command, mode) for every command and mode: mode "" is the command itself."""
    return [(c, m) for c in commands() for m in ("", *MODES.get(c, ()))]


@dataclass(frozen=True)
class Case:
    command: tuple[str, ...]
    mode: str
    argv: tuple[str, ...]  # after `console`; {tmp}, {fix}, {lab…} are filled in by the runner
    kind: str | None  # the JSON "error"; None: exit 0, a success (still one JSON document)
    code: int
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str | bytes] = field(default_factory=dict)  # path under {tmp} -> text (placeholders filled)
    driver: str = ""  # how the runner drives it beyond running it (a signal, a terminal): the test module's
    setup: str = ""  # what the lab needs first (the lab test module's)
    json: bool = True  # False: the case passes no -o json (the command's default output must still not break)

    @property
    def id(self) -> str:
        words = [*self.command, self.mode.lstrip("-")] if self.mode else list(self.command)
        return "-".join([*words, self.kind or "ok", str(self.code)])


def check(proc: subprocess.CompletedProcess[str], case: Case) -> Any:
    """The contract for one run; the JSON document."""
    out = f"argv: {proc.args}\nrc={proc.returncode}\nstdout: {proc.stdout[-3000:]}\nstderr: {proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stdout + proc.stderr, out
    assert proc.returncode == case.code, out
    try:
        doc = json.loads(proc.stdout)  # exactly one document: anything after it is "Extra data"
    except ValueError as e:
        raise AssertionError(f"stdout is not one JSON document ({e})\n{out}") from None
    if case.code == 0:
        assert not isinstance(doc, dict) or "error" not in doc or doc["error"] in KINDS, out
        return doc
    assert isinstance(doc, dict), out
    assert {"status", "error", "message", "exit_code"} <= set(doc), out
    assert doc["error"] == case.kind and doc["exit_code"] == case.code, out
    assert case.code in KINDS[doc["error"]].codes, f"{doc['error']} is not documented with exit {case.code}"
    assert isinstance(doc["status"], str) and doc["status"], out
    assert isinstance(doc["message"], str) and doc["message"].strip(), out
    assert doc["message"].strip().splitlines()[0] in proc.stderr, f"the message is not on stderr\n{out}"
    return doc


def covered(cases: list[Case]) -> tuple[set[tuple[tuple[str, ...], str]], set[str]]:
    """(the invocations, the kinds) the cases run."""
    return {(c.command, c.mode) for c in cases}, {c.kind for c in cases if c.kind}


def fill(text: str, values: dict[str, str]) -> str:
    """The placeholders ({tmp}, {fix}, …) filled in (not str.format: YAML's braces stay)."""
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


# -- the cases ------------------------------------------------------------------------------------------------------
# files the offline cases use (under {tmp})
RULE = ("apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata: {name: json-exits}\nspec:\n"
        "  rules:\n  - name: one\n    labels: {json-exits: 'true'}\n")
KUBECONFIG_CLOSED = ("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                     "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:{closed_port}', "
                     "insecure-skip-tls-verify: true}}]\n"
                     "users: [{name: u, user: {token: not-a-real-token-123}}]\n"
                     "contexts: [{name: c, context: {cluster: k, user: u}}]\n")
KUBECONFIG_EXEC = ("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                   "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:{closed_port}'}}]\n"
                   "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: 'false', "
                   "interactiveMode: Never}}}]\n"
                   "contexts: [{name: c, context: {cluster: k, user: u}}]\n")
BAD_CONFIG = "read_only: ture\n"
SLEEPING_HOOK = "#!/bin/sh\ntouch {tmp}/hook-started\nexec sleep 300\n"

# the commands that talk to the cluster, as run in the fault cases (offline: the API server is a closed port)
CLUSTER: dict[tuple[tuple[str, ...], str], tuple[str, ...]] = {
    (("get", "nodes"), ""): ("get", "nodes"),
    (("get", "pending"), ""): ("get", "pending"),
    (("get", "node"), ""): ("get", "node", "kube-worker01"),
    (("nfd", "status"), ""): ("nfd", "status"),
    (("nfd", "apply"), ""): ("nfd", "apply", "-f", "{tmp}/rule.yaml", "--yes"),
    (("nfd", "files", "list"), ""): ("nfd", "files", "list"),
    (("nfd", "files", "push"), ""): ("nfd", "files", "push", "{tmp}/rule.yaml", "--name", "json-exits",
                                     "--kind", "feature", "--node", "kube-worker01", "--yes"),
    (("nfd", "files", "rm"), ""): ("nfd", "files", "rm", "json-exits", "--kind", "feature", "--node",
                                   "kube-worker01", "--yes"),
    (("nfd", "publish"), ""): ("nfd", "publish", "--node", "kube-worker01", "--label", "json-exits=true", "--yes"),
    (("nfd", "dryrun"), ""): ("nfd", "dryrun", "--rule", "{tmp}/rule.yaml", "-n", "{fix}/nodefeature-worker-1.yaml",
                              "--from-cluster"),
    (("nfd", "local"), ""): ("nfd", "local", "--features-dir", "{tmp}", "--from-cluster"),
    (("scale-up",), ""): ("scale-up", "kube-worker01", "--flavor", "m1.large", "--yes"),
    (("scale-up",), "--dry-run"): ("scale-up", "kube-worker01", "--flavor", "m1.large", "--dry-run"),
    (("scale-up",), "--resume"): ("scale-up", "kube-worker01", "--resume", "scale-up-kube-worker01-x", "--yes"),
    (("scale-up",), "--revert"): ("scale-up", "kube-worker01", "--revert", "--yes"),
    (("plan",), ""): ("plan",),
    (("plan",), "--apply"): ("plan", "--apply", "--yes"),
}
# an argv for each invocation that argparse takes (a usage case adds a flag no command has)
BASE: dict[tuple[tuple[str, ...], str], tuple[str, ...]] = {
    **CLUSTER,
    (("nfd", "validate"), ""): ("nfd", "validate", "-f", "{tmp}/rule.yaml"),
    (("nfd", "discover"), ""): ("nfd", "discover", "--root", "{tmp}"),
    (("scale-up",), "--discard"): ("scale-up", "kube-worker01", "--discard", "scale-up-kube-worker01-x", "--yes"),
    (("config", "keys"), ""): ("config", "keys"),
    (("config", "path"), ""): ("config", "path"),
    (("lab",), ""): ("lab", "--scenario", "scale", "--nodes", "1"),
}
COMMON_FILES = {"rule.yaml": RULE, "kubeconfig-closed": KUBECONFIG_CLOSED, "kubeconfig-exec": KUBECONFIG_EXEC,
                "kubeconfig-garbage": "- not\n- a kubeconfig\n"}
# commands that read the settings (a bad config file is their exit 2)
SETTINGS = [k for k in CLUSTER if k[0] not in (("nfd", "dryrun"), ("nfd", "local"))] + [
    (("nfd", "dryrun"), ""), (("nfd", "local"), "")]  # with --from-cluster


def _c(key: tuple[tuple[str, ...], str], argv: tuple[str, ...], kind: str | None, code: int, **kw: Any) -> Case:
    return Case(key[0], key[1], argv, kind, code, **kw)


def _offline() -> list[Case]:
    out: list[Case] = []
    # usage: every invocation, an unknown flag (argparse's error, as the console's)
    out += [_c(k, (*argv, "--no-such-flag"), "usage", 2) for k, argv in BASE.items()]
    # a bad config file: every command that reads the settings
    out += [_c(k, CLUSTER[k], "bad-config", 2, files={"cfg/console/config.yaml": BAD_CONFIG}) for k in SETTINGS]
    # the cluster commands against a closed port, a garbage kubeconfig, an exec plugin that fails
    out += [_c(k, argv, "kube-unreachable", 6, env={"KUBECONFIG": "{tmp}/kubeconfig-closed"})
            for k, argv in CLUSTER.items() if k != (("scale-up",), "--revert")]
    # a revert needs OpenStack before anything: none configured is a refusal (then the API server is asked first)
    revert = (("scale-up",), "--revert")
    out += [_c(revert, CLUSTER[revert], "plan-refused", 2, env={"KUBECONFIG": "{tmp}/kubeconfig-closed"}),
            _c(revert, CLUSTER[revert], "kube-unreachable", 6,
               env={"KUBECONFIG": "{tmp}/kubeconfig-closed", "OS_AUTH_URL": "http://127.0.0.1:{closed_port}/v3",
                    "OS_USERNAME": "u", "OS_PASSWORD": "not-a-password-123", "OS_PROJECT_NAME": "p",
                    "OS_USER_DOMAIN_NAME": "Default", "OS_PROJECT_DOMAIN_NAME": "Default"})]
    out += [_c(k, argv, "bad-kubeconfig", 2, env={"KUBECONFIG": "{tmp}/kubeconfig-garbage"})
            for k, argv in CLUSTER.items()]
    out += [_c(k, CLUSTER[k], "kube-exec-plugin", 6, env={"KUBECONFIG": "{tmp}/kubeconfig-exec"})
            for k in ((("get", "nodes"), ""), (("nfd", "apply"), ""), (("scale-up",), "--dry-run"), (("plan",), ""))]
    get, val, dry, apply = (("get", "nodes"), ""), (("nfd", "validate"), ""), (("nfd", "dryrun"), ""), \
        (("nfd", "apply"), "")
    push, pub, local = (("nfd", "files", "push"), ""), (("nfd", "publish"), ""), (("nfd", "local"), "")
    nf = "{fix}/nodefeature-worker-1.yaml"
    out += [
        # a bad file: the previews' 1, the others' 2 (a FIFO: tests/unit/test_special_files.py)
        _c(val, ("nfd", "validate", "-f", "{tmp}/missing.yaml"), "bad-file", 1),
        _c(dry, ("nfd", "dryrun", "--rule", "{tmp}/rule.yaml", "-n", "{tmp}/binary.yaml"), "bad-file", 1,
           files={"binary.yaml": b"\xff\xfe\x00\x01"}),
        _c(apply, ("nfd", "apply", "-f", "{tmp}/missing.yaml"), "bad-file", 2),
        _c(push, ("nfd", "files", "push", "{tmp}/missing", "--kind", "feature", "--node", "n1"), "bad-file", 2),
        _c(pub, ("nfd", "publish", "--node", "n1", "--from-file", "{tmp}/missing", "--kind", "hook"), "bad-file", 2),
        _c(dry, ("nfd", "dryrun", "--rule", "{tmp}/rule.yaml", "-n", nf, "--master-config", "{tmp}/missing"),
           "bad-config", 2),
        _c(local, ("nfd", "local", "--features-dir", "{tmp}", "--worker-config", "{tmp}/garbage.yaml"),
           "bad-config", 2, files={"garbage.yaml": "core: [\n"}),
        # rules
        _c(val, ("nfd", "validate", "-f", "{fix}/rules/invalid.yaml"), "invalid-rule", 1),
        _c(dry, ("nfd", "dryrun", "--rule", "{fix}/rules/invalid.yaml", "-n", nf), "invalid-rule", 1),
        _c(apply, ("nfd", "apply", "-f", "{fix}/rules/invalid.yaml", "--yes"), "invalid-rule", 1),
        _c(dry, ("nfd", "dryrun", "--rule", "{fix}/rules/eval-error.yaml", "-n", nf), "evaluation-failed", 1),
        _c(val, ("nfd", "validate", "-f", "{tmp}/rule.yaml", "--nfd-version", "v0.1.0"), "unsupported-version", 1),
        _c(apply, ("--nfd-version", "v0.1.0", "nfd", "apply", "-f", "{tmp}/rule.yaml"), "unsupported-version", 2),
        # the command line's own values
        _c(get, ("get", "nodes", "-l", "=x"), "bad-selector", 2),
        _c(get, ("--theme", "broken", "get", "nodes"), "bad-theme", 2,
           files={"data/console/themes/broken.yaml": "name: broken\ncolors: [\n"}),
        _c(push, ("nfd", "files", "push", "{tmp}/rule.yaml", "--name", ".hidden", "--kind", "feature", "--node",
                  "n1"), "bad-name", 2),
        _c(push, ("nfd", "files", "push", "-", "--kind", "feature", "--node", "n1"), "usage", 2),
        _c(pub, ("nfd", "publish", "--node", "n1", "--from-file", "{tmp}/rule.yaml"), "usage", 2),
        _c((("scale-up",), ""), ("scale-up", "n1"), "usage", 2),
        _c((("plan",), ""), ("plan", "--pin", "n1"), "usage", 2),
        _c((("plan",), "--apply"), ("plan", "--apply", "--parallel", "0"), "usage", 2),
        _c((("lab",), ""), ("lab", "--scenario", "scale", "--nodes", "-3"), "usage", 2),
        _c((("lab",), ""), ("lab", "--scenario", "no-such-scenario"), "usage", 2),
        _c((("scale-up",), "--discard"), ("scale-up", "n1", "--discard", "scale-up-n1-no-such-run"), "journal", 2),
        _c((("scale-up",), "--discard"), ("scale-up", "n1", "--discard", "../x"), "journal", 2),
        # interrupted: a hook that sleeps (nfd local kills its tree first: 4), a request no one answers (main: 130)
        _c(local, ("nfd", "local", "--features-dir", "{tmp}", "--hooks-dir", "{tmp}/hooks", "--nfd-version",
                   "v0.16.0", "--hooks-enabled", "true"), "interrupted", 4,
           files={"hooks/sleeper": SLEEPING_HOOK}, driver="sigint-when-hook-started"),
        _c(get, ("get", "nodes"), "interrupted", 130, env={"KUBECONFIG": "{tmp}/kubeconfig-silent"},
           driver="sigint-when-connected"),
        _c((("lab",), ""), ("lab", "--scenario", "scale", "--nodes", "1"), "lab-not-installed", 2,
           driver="without-lab-extra"),
        # successes: one JSON document too
        _c((("config", "keys"), ""), ("config", "keys"), None, 0),
        _c((("config", "path"), ""), ("config", "path"), None, 0),
        _c(val, ("nfd", "validate", "-f", "{tmp}/rule.yaml"), None, 0),
        _c(val, ("nfd", "validate", "-f", "-"), None, 0, driver="rule-on-stdin"),
        _c(dry, ("nfd", "dryrun", "--rule", "{tmp}/rule.yaml", "-n", nf), None, 0),
        _c(local, ("nfd", "local", "--features-dir", "{tmp}"), None, 0),
        _c((("nfd", "discover"), ""), ("nfd", "discover", "--root", "{fix}/host"), None, 0),
    ]
    return out


OFFLINE = _offline()

NOT_TRIGGERED = {
    "bug": "no input known reaches it (one that did would be fixed); cli.fault_exit's bug path is run in-process by "
           "tests/unit/test_json_exits.py::test_the_bug_line_and_its_json with an exception nothing classifies",
    "openstack-forbidden": "a 403 from Nova or Placement before any change: every read the console makes before a "
                           "change is allowed to a project member by Nova's default policy (the lab's Nova follows it; "
                           "Placement's admin-only reads are notes of the plan, not faults), so only a cloud with a "
                           "stricter policy.yaml answers 403 there; its path (faults.classify, cli.fault_exit) is run "
                           "in-process by tests/unit/test_json_exits.py::test_unreachable_kinds_through_main",
    "bad-yaml": "faults.classify's safety net for a raw YAMLError: every YAML file the console reads goes through a "
                "reader that names it (console/bounded.py, the config schema, the kubeconfig, clouds.yaml) and the "
                "cluster's NFD config is a warning; run in-process by test_unreachable_kinds_through_main",
    "lab-failed": "the lab failing to start needs a machine whose libvirt or QEMU does not work (this one has both); "
                  "cli_lab.run's LabError path is run in-process by test_lab_that_does_not_start",
}

# -- against the lab ------------------------------------------------------------------------------------------------
# {faults}: the lab's fault files (console/lab/faultfiles.py); {tmp}: the case's own directory; the environment is the
# lab's (`. DIR/env`). `setup` names what the lab test module does first through the real APIs.
FEATURE = "json-exits=true\n"
FAILING_HOOK = "#!/bin/sh\necho broken >&2\nexit 3\n"
LAB_FILES: dict[str, str | bytes] = {"rule.yaml": RULE, "feature": FEATURE, "empty": "", "failing-hook": FAILING_HOOK,
                                     "upper.yaml": RULE.replace("name: json-exits", "name: Upper_Case")}
WRONG_TOKEN, WRONG_CA, FORBIDDEN = ({"KUBECONFIG": "{faults}/kubeconfig-" + n} for n in
                                    ("wrong-token", "wrong-ca", "forbidden"))
CLOUD = {"OS_CLIENT_CONFIG_FILE": "{faults}/clouds.yaml"}


def _lab_default() -> list[Case]:
    out: list[Case] = []
    # every command that talks to the cluster, with a token the API server never issued: 401
    out += [_c(k, argv, "kube-unauthorized", 6, env=WRONG_TOKEN, files=LAB_FILES) for k, argv in CLUSTER.items()]
    get, status, apply = (("get", "nodes"), ""), (("nfd", "status"), ""), (("nfd", "apply"), "")
    files_list, push, pub = (("nfd", "files", "list"), ""), (("nfd", "files", "push"), ""), (("nfd", "publish"), "")
    up, dry, revert = (("scale-up",), ""), (("scale-up",), "--dry-run"), (("scale-up",), "--revert")
    plan, fleet = (("plan",), ""), (("plan",), "--apply")
    w1 = ("--node", "kube-worker01")
    out += [
        # successes: one JSON document
        *(_c(k, CLUSTER[k], None, 0, files=LAB_FILES) for k in (
            get, (("get", "pending"), ""), (("get", "node"), ""), status, files_list, dry, plan,
            (("nfd", "dryrun"), ""), (("nfd", "local"), ""))),
        # the other faults of a backend
        _c(get, CLUSTER[get], "kube-tls", 6, env=WRONG_CA),
        _c(files_list, CLUSTER[files_list], "kube-tls", 6, env=WRONG_CA),
        _c(get, CLUSTER[get], "kube-forbidden", 6, env=FORBIDDEN),
        _c(status, CLUSTER[status], "kube-forbidden", 6, env=FORBIDDEN),
        _c(plan, CLUSTER[plan], "keystone-auth", 6, env=CLOUD | {"OS_CLOUD": "lab-wrong-password"}),
        _c(plan, CLUSTER[plan], "keystone-unreachable", 6, env=CLOUD | {"OS_CLOUD": "lab-keystone-down"}),
        _c(dry, CLUSTER[dry], "bad-clouds-yaml", 2, env={"OS_CLOUD": "no-such-cloud"}),
        _c(dry, CLUSTER[dry], "openstack-unreachable", 6, env={"OS_CLIENT_CONFIG_FILE": "{tmp}/clouds.yaml"},
           setup="nova-endpoint-closed"),
        _c(dry, ("scale-up", "kube-worker01", "--vcpus", "4", "--memory", "8Gi", "--method", "libvirt", "--dry-run"),
           "libvirt-unreachable", 6, env={"CONSOLE_LIBVIRT_URI": "{libvirt_unreachable}", "OS_CLOUD": ""}),
        _c(dry, ("scale-up", "kube-worker01", "--vcpus", "4", "--memory", "8Gi", "--method", "libvirt", "--dry-run"),
           "libvirt-auth", 6, env={"CONSOLE_LIBVIRT_URI": "{libvirt_sasl}", "OS_CLOUD": ""}, setup="libvirt-sasl"),
        # not found, refused before any change
        _c((("get", "node"), ""), ("get", "node", "no-such-node"), "not-found", 3),
        _c(dry, ("scale-up", "kube-worker01", "--flavor", "no-such-flavor", "--dry-run"), "plan-refused", 2),
        _c(revert, CLUSTER[revert], "plan-refused", 2),  # nothing waits in VERIFY_RESIZE
        _c(apply, ("--read-only", *CLUSTER[apply]), "read-only", 2, files=LAB_FILES),
        _c(push, ("--read-only", *CLUSTER[push]), "read-only", 2, files=LAB_FILES),
        _c(pub, ("--read-only", *CLUSTER[pub]), "read-only", 2),
        _c(up, ("--read-only", *CLUSTER[up]), "read-only", 2),
        _c(fleet, ("--read-only", *CLUSTER[fleet]), "read-only", 2),
        _c(apply, CLUSTER[apply], "audit-unwritable", 2, files={**LAB_FILES, "state/console/audit.log/x": ""}),
        _c(apply, (*CLUSTER[apply], "--context", "lab-viewer"), "forbidden", 2, files=LAB_FILES),
        _c(up, (*CLUSTER[up], "--context", "lab-viewer"), "forbidden", 2),
        _c(pub, (*CLUSTER[pub], "--context", "lab-viewer"), "forbidden", 2),
        _c(pub, ("nfd", "publish", *w1, "--name", "kube-worker01", "--label", "a=b", "--yes"), "refused", 2),
        _c(pub, ("nfd", "publish", *w1, "--label", "bad key=x", "--yes"), "bad-label", 2),
        _c(pub, ("nfd", "publish", "-l", "json-exits=nowhere", "--label", "a=b", "--yes"), "no-nodes", 1),
        _c(push, ("nfd", "files", "push", "{tmp}/feature", "--kind", "feature", "-l", "json-exits=nowhere", "--yes"),
           "no-nodes", 2, files=LAB_FILES),
        _c(pub, ("nfd", "publish", "--node", "no-such-node", "--label", "a=b", "--yes"), "no-such-node", 1),
        _c(push, ("nfd", "files", "push", "{tmp}/feature", "--kind", "feature", "--node", "no-such-node", "--yes"),
           "no-such-node", 2, files=LAB_FILES),
        _c(push, ("nfd", "files", "push", "{tmp}/feature", "--kind", "hook", *w1, "--yes"), "unwritable-mount", 2,
           files=LAB_FILES),
        _c(plan, ("plan", "--pods", "default/no-such-pod"), "bad-pod", 2),
        _c(up, ("scale-up", "kube-worker02", "--flavor", "m1.large", "--yes"), "held", 2, setup="lease-held"),
        # failed (1)
        _c(apply, ("nfd", "apply", "-f", "{tmp}/upper.yaml", "--yes"), "rejected", 1, files=LAB_FILES),
        _c(pub, ("nfd", "publish", *w1, "--name", "Bad_Name", "--label", "a=b", "--yes"), "failed", 1),
        _c(pub, ("nfd", "publish", *w1, "--from-file", "{tmp}/failing-hook", "--kind", "hook", "--yes"),
           "hook-failed", 1, files=LAB_FILES),
        _c(pub, ("nfd", "publish", *w1, "--from-file", "{tmp}/empty", "--kind", "feature", "--yes"),
           "nothing-to-publish", 1, files=LAB_FILES),
        _c(apply, ("nfd", "apply", "-f", "{tmp}/rule.yaml"), "conflict", 1, files=LAB_FILES,
           driver="answer-after-someone-else-changed-it"),
        # not confirmed (stdin is not a terminal, no --yes)
        _c(apply, ("nfd", "apply", "-f", "{tmp}/rule.yaml"), "not-confirmed", 5, files=LAB_FILES),
        _c(push, ("nfd", "files", "push", "{tmp}/feature", "--kind", "feature", *w1), "not-confirmed", 5,
           files=LAB_FILES),
        _c(pub, ("nfd", "publish", *w1, "--label", "json-exits=true"), "not-confirmed", 5),
        _c(up, ("scale-up", "kube-worker01", "--flavor", "m1.large"), "not-confirmed", 5),
        _c(fleet, ("plan", "--apply"), "not-confirmed", 5),
        # 3: not placed, not relabelled, not verified (the last ones change the lab: they run last)
        _c(plan, ("plan",), "unplaceable", 3, setup="huge-pending-pod"),
        _c(push, ("nfd", "files", "push", "{tmp}/feature", "--kind", "feature", *w1, "--yes"), "not-relabelled", 3,
           files=LAB_FILES, setup="no-nfd-master"),
        _c(up, ("scale-up", "kube-worker01", "--flavor", "m1.large", "--yes", "--pods-timeout", "0.001"),
           "verify-failed", 3, setup="unpullable-pending-pod"),
        # the lab itself, ready: one object, then Ctrl-C stops it
        _c((("lab",), ""), ("lab", "--scenario", "scale", "--nodes", "1", "--state-dir", "{tmp}/lab"), None, 0,
           driver="sigint-when-ready"),
    ]
    return out


def _lab_scale() -> list[Case]:
    """The `scale` scenario: nodes without NFD workloads (and without recorded versions)."""
    status, files_list = (("nfd", "status"), ""), (("nfd", "files", "list"), "")
    return [
        _c(status, CLUSTER[status], "no-nfd", 3),
        _c(files_list, CLUSTER[files_list], "no-nfd", 2),
        _c((("nfd", "dryrun"), ""), CLUSTER[(("nfd", "dryrun"), "")], "no-nfd", 1, files=LAB_FILES),
        _c((("nfd", "publish"), ""), ("nfd", "publish", "--node", "node-00000", "--label", "a=b", "--yes"),
           "nfd-version-unknown", 2),
        _c((("nfd", "publish"), ""), ("--nfd-version", "v0.18.1", "nfd", "publish", "--node", "node-00000",
                                      "--label", "a=b", "--yes"), "no-nodefeature-api", 2, setup="no-nodefeature-crd"),
    ]


def _lab_old_nfd() -> list[Case]:
    """`seed-drain`: NFD v0.8.2, and what a drain meets on kube-worker02 (a PDB allowing no disruption)."""
    up, discard = (("scale-up",), ""), (("scale-up",), "--discard")
    resume = (("scale-up",), "--resume")
    return [
        _c((("nfd", "publish"), ""), ("nfd", "publish", "--node", "kube-worker01", "--label", "a=b", "--yes"),
           "nfd-too-old", 2),
        # the PDB refuses the eviction until the drain's timeout: the run stops needing attention (resumable)
        _c(up, ("scale-up", "kube-worker02", "--flavor", "m1.large", "--yes", "--force", "--delete-emptydir-data",
                "--drain-timeout", "1"), "needs-attention", 4),
        _c(resume, ("scale-up", "kube-worker02", "--flavor", "m1.xlarge", "--resume", "{run_id}", "--yes"),
           "run-differs", 2),
        _c(discard, ("scale-up", "kube-worker02", "--discard", "{run_id}"), "not-confirmed", 5),
        _c(discard, ("scale-up", "kube-worker02", "--discard", "{run_id}", "--yes"), None, 0),
    ]


LAB_DEFAULT = _lab_default()
LAB_SCALE = _lab_scale()
LAB_OLD_NFD = _lab_old_nfd()
