"""Issue 20 point 7: with `-o json`, every command and every exit path prints exactly one JSON document, and an exit
other than 0 is {"status", "error", "message", "exit_code"} with `error` a kind of console/exit_codes.py's one list,
documented with that exit code (tests/support/jsonexits.py has the matrix and the contract).

Here: the cases that need no server (a closed port, a garbage or exec-plugin kubeconfig, bad files and flags, Ctrl-C),
and the coverage — every command and mode of the parser, every kind of the list, has a case here or in the lab's
tests/integration/faults/test_json_exits_lab.py (or is in NOT_TRIGGERED, with the reason and its own test).
Before: `nfd validate`/`nfd dryrun` printed no JSON for a bad file, "not confirmed" none, refusals had no `error`,
argparse's usage errors none.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from jsonexits import (
    COMMON_FILES,
    NOT_TRIGGERED,
    OFFLINE,
    RULE,
    Case,
    check,
    covered,
    fill,
    invocations,
)

from console.exit_codes import KINDS

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "nfd"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare(case: Case, tmp: Path, values: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """Write the case's files under tmp; its argv (with -o json) and environment."""
    for rel, data in {**COMMON_FILES, **case.files}.items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(fill(data, values))
    for hook in (tmp / "hooks").glob("*"):
        hook.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONSOLE_", "OS_", "KUBECONFIG"))}
    env |= {"XDG_CONFIG_HOME": str(tmp / "cfg"), "XDG_STATE_HOME": str(tmp / "state"),
            "XDG_DATA_HOME": str(tmp / "data"), "HOME": str(tmp / "home"), "KUBECONFIG": str(tmp / "no-kubeconfig"),
            "OS_CLIENT_CONFIG_FILE": str(tmp / "no-clouds.yaml")}
    env |= {k: fill(v, values) for k, v in case.env.items()}
    argv = [fill(a, values) for a in case.argv] + (["-o", "json"] if case.json else [])
    return argv, env


@pytest.fixture
def values(tmp_path: Path) -> dict[str, str]:
    return {"tmp": str(tmp_path), "fix": str(FIX), "closed_port": str(_closed_port())}


# -- drivers: what a case needs besides running -----------------------------------------------------------------


def _wait_for(condition: object, what: str, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert proc.poll() is None, f"exited before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.02)  # polling a condition of another process, not waiting for a moment


@pytest.fixture
def silent_server(tmp_path: Path, values: dict[str, str]) -> Iterator[threading.Event]:
    """A TCP server that accepts and never answers; kubeconfig-silent points at it. The event: a connection."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    accepted = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            held.append(conn)
            accepted.set()

    threading.Thread(target=serve, daemon=True).start()
    port = srv.getsockname()[1]
    (tmp_path / "kubeconfig-silent").write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: k, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: not-a-real-token-123}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n")
    yield accepted
    srv.close()
    for c in held:
        c.close()


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_case(case: Case, tmp: Path, values: dict[str, str], request: pytest.FixtureRequest
             ) -> subprocess.CompletedProcess[str]:
    argv, env = prepare(case, tmp, values)
    cmd = [sys.executable, "-m", "console", *argv]
    if case.driver == "without-lab-extra":  # the lab extra absent: its first module cannot be found
        cmd = [sys.executable, "-c", "import sys; sys.modules['aiohttp'] = None; from console.cli import main; "
               "sys.exit(main(sys.argv[1:]))", *argv]
    if case.driver in ("sigint-when-hook-started", "sigint-when-connected"):
        accepted = request.getfixturevalue("silent_server") if case.driver == "sigint-when-connected" else None
        # -X faulthandler: a run that outlives its SIGINT is sent SIGABRT and prints every thread's stack.
        # SIGINT at its default, as for a command at a terminal: a suite started in the background (`cmd &`
        # without job control) has SIGINT ignored, a child inherits SIG_IGN across exec (signal(7)), and Python
        # then installs no KeyboardInterrupt handler (seen: the run ignored its SIGINT only when pytest was a
        # background job)
        proc = subprocess.Popen([cmd[0], "-X", "faulthandler", *cmd[1:]], env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp,
                                preexec_fn=_sigint_default)
        try:
            if accepted is not None:
                _wait_for(accepted.is_set, "connected", proc)
            else:
                _wait_for((tmp / "hook-started").exists, "started the hook", proc)
            proc.send_signal(signal.SIGINT)
            try:
                out, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGABRT)
                out, err = proc.communicate(timeout=30)
                raise AssertionError(f"still running 60 s after SIGINT; its threads then:\n{err[-6000:]}") from None
        finally:
            if proc.poll() is None:
                proc.kill()
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    stdin = RULE if case.driver == "rule-on-stdin" else None
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=tmp, input=stdin,
                          stdin=None if stdin is not None else subprocess.DEVNULL)


@pytest.mark.parametrize("case", OFFLINE, ids=[c.id for c in OFFLINE])
def test_offline(case: Case, tmp_path: Path, values: dict[str, str], request: pytest.FixtureRequest) -> None:
    doc = check(run_case(case, tmp_path, values, request), case)
    if case.driver == "sigint-when-hook-started":
        assert "killed" in doc["message"]


# -- coverage: every command, every kind ----------------------------------------------------------------------------


def _all_cases() -> list[Case]:
    from jsonexits import LAB_DEFAULT, LAB_OLD_NFD, LAB_SCALE

    return OFFLINE + LAB_DEFAULT + LAB_SCALE + LAB_OLD_NFD


def test_every_command_and_mode_of_the_parser_has_cases() -> None:
    """A command added to the parser without cases fails here; a case for a command that is gone too."""
    runs, _ = covered(_all_cases())
    assert sorted(set(invocations()) - runs) == []
    assert sorted(runs - set(invocations())) == []
    offline, _ = covered(OFFLINE)
    assert sorted(set(invocations()) - offline) == [], "each command has a usage case that needs no server"


def test_every_kind_of_the_list_is_triggered() -> None:
    _, kinds = covered(_all_cases())
    assert sorted(set(KINDS) - kinds - set(NOT_TRIGGERED)) == []
    assert sorted(kinds - set(KINDS)) == [], "a case expects a kind that is not in the list"
    assert sorted(set(NOT_TRIGGERED) & kinds) == [], "NOT_TRIGGERED lists a kind a case triggers"
    for case in _all_cases():
        assert case.kind is None or case.code in KINDS[case.kind].codes, case.id


def test_the_modes_are_the_parsers_flags() -> None:
    from jsonexits import MODES

    from console.cli import build_parser

    parser = build_parser()
    for command, modes in MODES.items():
        sub = parser
        for word in command:
            action = next(a for a in sub._actions if isinstance(a, argparse._SubParsersAction))
            sub = action.choices[word]
        flags = {o for a in sub._actions for o in a.option_strings}
        assert set(modes) <= flags, command


def test_the_bug_line_and_its_json(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`bug` (70): what cli.main does with an exception nothing classifies — no input is known to reach it (one
    that did would be a bug to fix), so cli.fault_exit is called with one."""
    from console import cli

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    code = cli.fault_exit(argparse.Namespace(output="json"), KeyError("spec"))
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert code == 70 and doc["error"] == "bug" and doc["exit_code"] == 70 and doc["status"] == "error"
    assert doc["message"] in err and "KeyError" not in err and "this is a bug" in err
    assert "KeyError: 'spec'" in (tmp_path / "state" / "console" / "console.log").read_text()  # the class: in the log


def _forbidden() -> BaseException:
    from openstack.exceptions import ForbiddenException

    return ForbiddenException("Policy doesn't allow os_compute_api:servers:index to be performed.")


def _yaml_error() -> BaseException:
    import yaml

    try:
        yaml.safe_load("a: [\n")
    except yaml.YAMLError as e:
        return e
    raise AssertionError("not an error")


@pytest.mark.parametrize(("kind", "make"), [("openstack-forbidden", _forbidden), ("bad-yaml", _yaml_error)])
def test_unreachable_kinds_through_main(kind: str, make: object, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """NOT_TRIGGERED kinds no case can reach (the reasons are there): the error as its library raises it, through
    what cli.main does with it."""
    from console import cli

    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    code = cli.fault_exit(argparse.Namespace(output="json"), make())  # type: ignore[operator]
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert (doc["error"], doc["exit_code"], code) == (kind, KINDS[kind].codes[0], KINDS[kind].codes[0])
    assert doc["message"] in err


def test_lab_that_does_not_start(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """lab-failed: the lab's start raising its LabError, as on a machine whose libvirt does not start."""
    from console import cli
    from console.lab import world

    def start(self: object, progress: object = None) -> None:
        raise world.LabError("libvirt did not start: cannot find libvirtd. Run ./dev lab to install libvirt and QEMU.")

    monkeypatch.setattr(world.Lab, "start", start)
    monkeypatch.setattr(world.Lab, "stop", lambda self: None)
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)}
    code = cli.main(["lab", "--scenario", "scale", "--nodes", "1", "--state-dir", str(tmp_path / "lab"), "-o", "json"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert code == 1 and doc["error"] == "lab-failed" and doc["exit_code"] == 1 and "libvirt did not start" in err
    assert {s: signal.getsignal(s) for s in before} == before  # the caller's handlers survive an in-process run


def test_each_kind_not_triggered_has_its_test() -> None:
    here = Path(__file__).read_text()
    assert set(NOT_TRIGGERED) == {"bug", "openstack-forbidden", "bad-yaml", "lab-failed"}
    for why in NOT_TRIGGERED.values():
        for name in [w.split("::")[-1].rstrip(",;") for w in why.split() if w.startswith(("test_", "tests/"))]:
            assert f"def {name}(" in here, name


def test_an_error_objects_facts_never_replace_its_four_keys() -> None:
    """`nfd files push` ends a conflict with the plan's fields (its file `kind` among them) as facts."""
    from console.exit_codes import error_doc

    doc = error_doc("conflict", "changed since the preview", 1, kind="feature", message="x", exit_code=0, error="y")
    assert doc == {"kind": "feature", "status": "error", "error": "conflict", "message": "changed since the preview",
                   "exit_code": 1}
