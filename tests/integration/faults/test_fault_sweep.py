"""The fault sweep (issue 9, deliverable 6): every ordinary fault × every entry point, against the lab's real servers.

Each case runs `python -m console ...` in a subprocess with the real clients (kubernetes, openstacksdk,
libvirt-python) pointed at a file the lab wrote in `<state>/faults/` (console/lab/faultfiles.py): the lab's API
server answers 401 to a token it never issued and 403 — with the apiserver's own Status text
(k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go forbiddenMessage) — to an authenticated user
without RBAC; a kubeconfig holding another CA fails TLS verification; a closed port refuses; Keystone answers
401 to a wrong password; a libvirt socket is missing. Asserted for each: no "Traceback" anywhere, the
documented exit code (6 backend, 2 bad file; README "Exit codes"), one `console: ...` line naming the fault,
and with `-o json` the error object on stdout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from labstart import start_lab

import console
from console.lab import scenarios
from console.lab.faultfiles import FaultFiles
from console.lab.world import Lab

NODE = "node-00000"  # the scale scenario's first node (no VM: the backends fail before a VM is needed)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab(scenarios.get("scale", nodes=2, pods_per_node=1), tmp_path_factory.mktemp("fault-sweep"))


@dataclass(frozen=True)
class Case:
    env: dict[str, str]  # what the fault changes; "{faults}" / "{tmp}" are filled in
    kind: str  # the JSON "error"
    exit_code: int
    words: tuple[str, ...]  # each must appear in the stderr line
    files: dict[str, bytes] = field(default_factory=dict)  # written under tmp first


FAULTS: dict[str, Case] = {
    "unreachable-api": Case({"KUBECONFIG": "{faults}/kubeconfig-unreachable"}, "kube-unreachable", 6,
                            ("cannot reach", "refused")),
    "wrong-ca": Case({"KUBECONFIG": "{faults}/kubeconfig-wrong-ca"}, "kube-tls", 6,
                     ("CA", "certificate-authority-data", "not the network")),
    "401": Case({"KUBECONFIG": "{faults}/kubeconfig-wrong-token"}, "kube-unauthorized", 6,
                ("401", "credentials", "user lab-admin")),
    "403": Case({"KUBECONFIG": "{faults}/kubeconfig-forbidden"}, "kube-forbidden", 6,
                ('is forbidden: User "lab-nobody" cannot get resource "nodes"', "RBAC")),
    "keystone-wrong-password": Case({"OS_CLIENT_CONFIG_FILE": "{faults}/clouds.yaml", "OS_CLOUD": "lab-wrong-password"},
                                    "keystone-auth", 6, ("Keystone", "password", "401")),
    "keystone-wrong-project": Case({"OS_CLIENT_CONFIG_FILE": "{faults}/clouds.yaml", "OS_CLOUD": "lab-wrong-project"},
                                   "keystone-auth", 6, ("Keystone (cloud lab-wrong-project)", "project", "401")),
    "keystone-unreachable": Case({"OS_CLIENT_CONFIG_FILE": "{faults}/clouds.yaml", "OS_CLOUD": "lab-keystone-down"},
                                 "keystone-unreachable", 6, ("Keystone", "cannot reach", "refused")),
    "missing-cloud": Case({"OS_CLOUD": "no-such-cloud"}, "bad-clouds-yaml", 2, ("clouds.yaml", "no-such-cloud")),
    "garbage-clouds-yaml": Case({"OS_CLIENT_CONFIG_FILE": "{tmp}/clouds.yaml"}, "bad-clouds-yaml", 2,
                                ("clouds.yaml", "not valid YAML"), {"clouds.yaml": b"clouds: [\n"}),
    "garbage-kubeconfig": Case({"KUBECONFIG": "{tmp}/garbage"}, "bad-kubeconfig", 2, ("not a kubeconfig",),
                               {"garbage": b"\xff\xfe\x00\x01 garbage [[["}),
    "list-kubeconfig": Case({"KUBECONFIG": "{tmp}/list"}, "bad-kubeconfig", 2, ("not a kubeconfig",),
                            {"list": b"- a\n- b\n"}),
    "bad-config-type": Case({}, "bad-config", 2, ("node_access",),
                            {"xdg_config_home/console/config.yaml": b"node_access: 5\n"}),
}
# wrong types the settings slice's typed schema (console/config_schema.py) turns into ConfigError; without it
# they reach cli.main's last-resort handler (exit 70). With it the cases run, and must pass.
SETTINGS_SLICE = pytest.mark.xfail(not (Path(console.__file__).parent / "config_schema.py").exists(), strict=True,
                                   reason="needs the settings slice's typed config schema")
FAULTS_AFTER_SETTINGS = {
    "libvirt-uris-5": Case({}, "bad-config", 2, ("libvirt_uris",),
                           {"xdg_config_home/console/config.yaml": b"libvirt_uris: 5\n"}),
    "config-not-utf8": Case({}, "bad-config", 2, ("config.yaml",),
                            {"xdg_config_home/console/config.yaml": b"\xff\xfe\x00read_only: true\n"}),
}

ENTRY_POINTS: dict[str, tuple[str, ...]] = {
    "scale-up-dry-run": ("scale-up", NODE, "--flavor", "m1.large", "--dry-run"),
    "scale-up-dry-run-json": ("scale-up", NODE, "--flavor", "m1.large", "--dry-run", "-o", "json"),
    "scale-up-revert": ("scale-up", NODE, "--revert", "--yes"),
    "scale-up-revert-json": ("scale-up", NODE, "--revert", "--yes", "-o", "json"),
}
# the TUI start: faults of the files are found before any screen (OpenStack/API faults show inside the TUI)
TUI_FAULTS = ("garbage-kubeconfig", "list-kubeconfig", "bad-config-type")


def _run(lab: Lab, tmp: Path, case: Case, argv: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    for rel, data in case.files.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_bytes(data)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONSOLE_", "OS_"))}
    env |= {"KUBECONFIG": str(lab.state.kubeconfig), "OS_CLIENT_CONFIG_FILE": str(lab.state.clouds_yaml),
            "OS_CLOUD": "lab", "XDG_CONFIG_HOME": str(tmp / "xdg_config_home"),
            "XDG_STATE_HOME": str(tmp / "xdg_state_home"), "XDG_DATA_HOME": str(tmp / "xdg_data_home")}
    faults = FaultFiles(lab.state.root / "faults")
    env |= {k: v.format(faults=faults.root, tmp=tmp) for k, v in case.env.items()}
    return subprocess.run([sys.executable, "-m", "console", *argv], env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def _secrets(lab: Lab) -> set[str]:
    """Every token and password the lab handed out (good and bad): none may be printed."""
    import yaml

    root = lab.state.root
    found: set[str] = set()
    for kc in [lab.state.kubeconfig, *sorted((root / "faults").glob("kubeconfig-*"))]:
        found |= {u["user"].get("token", "") for u in yaml.safe_load(kc.read_text())["users"]}
    for clouds in (lab.state.clouds_yaml, root / "faults" / "clouds.yaml"):
        found |= {c["auth"]["password"] for c in yaml.safe_load(clouds.read_text())["clouds"].values()}
    return {s for s in found if len(s) > 8}


def _check(proc: subprocess.CompletedProcess[str], case: Case, as_json: bool, lab: Lab | None = None) -> None:
    out = f"stdout: {proc.stdout}\nstderr: {proc.stderr}"
    assert "Traceback" not in proc.stdout + proc.stderr, out
    for secret in _secrets(lab) if lab is not None else ():
        assert secret not in proc.stdout + proc.stderr, "a token or password was printed"
    assert proc.returncode == case.exit_code, out
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("console: "), out
    for word in case.words:
        assert word in lines[0], f"{word!r} not in the line; {out}"
    if as_json:
        assert json.loads(proc.stdout) == {"status": "error", "error": case.kind, "message": lines[0][9:],
                                           "exit_code": case.exit_code}, out
    else:
        assert proc.stdout == "", out


def _params(faults: dict[str, Case], marks: tuple = ()) -> list:
    return [pytest.param(f, e, id=f"{f}-{e}", marks=marks) for f in faults for e in ENTRY_POINTS]


@pytest.mark.parametrize(("fault", "entry"), _params(FAULTS) + _params(FAULTS_AFTER_SETTINGS, (SETTINGS_SLICE,)))
def test_headless(lab: Lab, tmp_path: Path, fault: str, entry: str) -> None:
    case = FAULTS.get(fault) or FAULTS_AFTER_SETTINGS[fault]
    argv = ENTRY_POINTS[entry]
    if fault == "403" and "--revert" in argv:
        case = Case(case.env, case.kind, case.exit_code, ("is forbidden", "lab-nobody", "RBAC"))
    _check(_run(lab, tmp_path, case, argv), case, "json" in argv, lab)


def test_libvirt_unreachable(lab: Lab, tmp_path: Path) -> None:
    """A live resize through a libvirt URI nobody answers: exit 6 naming the URI, with and without -o json."""
    uri = FaultFiles(lab.state.root / "faults").libvirt_uri
    case = Case({"CONSOLE_LIBVIRT_URI": uri, "OS_CLOUD": ""}, "libvirt-unreachable", 6,
                (f"libvirt at {uri}", "cannot connect", "CONSOLE_LIBVIRT_URI"))
    for extra in ((), ("-o", "json")):
        argv = ("scale-up", NODE, "--vcpus", "4", "--memory", "8Gi", "--method", "libvirt", "--dry-run", *extra)
        _check(_run(lab, tmp_path, case, argv), case, bool(extra))


@pytest.mark.parametrize("fault", TUI_FAULTS)
def test_tui_start(lab: Lab, tmp_path: Path, fault: str) -> None:
    """`python -m console` exits 2 with one line before any screen (stdout stays empty: no screen drawn)."""
    _check(_run(lab, tmp_path, FAULTS[fault], ()), FAULTS[fault], False)


def test_tui_theme_flag_naming_a_binary_theme_file(lab: Lab, tmp_path: Path) -> None:
    case = Case({}, "bad-theme", 2, ("theme broken", "broken.yaml", "not UTF-8"),
                {"xdg_data_home/console/themes/broken.yaml": b"\xff\xfe\x00\x01\x02"})
    _check(_run(lab, tmp_path, case, ("--theme", "broken")), case, False)


@pytest.mark.parametrize(("name", "data", "words"), [
    ("binary", b"\xff\xfe\x00\x01", ("not UTF-8",)),
    ("list", b"- a\n- b\n", ("expected NodeFeatureRule",)),
    ("bad-yaml", b"a: [\n", ("invalid YAML",)),
])
def test_nfd_dryrun_bad_files(tmp_path: Path, name: str, data: bytes, words: tuple[str, ...]) -> None:
    """`nfd dryrun` on unusable input files: one line naming the file, exit 1 (DESIGN.md: nfd's invalid input)."""
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(data)
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))
    for extra in ((), ("-o", "json")):
        proc = subprocess.run([sys.executable, "-m", "console", "nfd", "dryrun", "-f", str(path), "-n", str(path),
                               *extra], env=env, capture_output=True, text=True, timeout=60)
        assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
        assert proc.returncode == 1, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and path.name in lines[0] and all(w in lines[0] for w in words), proc.stderr


@pytest.mark.parametrize(("argv", "words"), [
    (("lab", "--scenario", "no-such"), ("unknown scenario",)),
    (("lab", "--scenario", "scale", "--nodes", "-3"), ("--nodes must be at least 1",)),
    (("lab", "--state-dir", "/proc/no-such/dir"), ("cannot create the state directory",)),
    (("lab", "--nodes", "x"), ("invalid int value",)),
])
def test_lab_bad_args(tmp_path: Path, argv: tuple[str, ...], words: tuple[str, ...]) -> None:
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))
    proc = subprocess.run([sys.executable, "-m", "console", *argv], env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert proc.returncode == 2, proc.stderr
    assert all(w in proc.stderr.strip().splitlines()[-1] for w in words), proc.stderr
