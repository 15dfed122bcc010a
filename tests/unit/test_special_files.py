"""Issue 20 point 4: a FIFO (or a device, a socket) where a command expects a file is refused with one line naming
it, before it is opened — never waited on. Before: `open()` blocked until a writer came, for ever.

Every place a command opens a file a user named: --rule/-f, --nodefeature, --master-config, --worker-config,
`nfd apply -f`, `nfd files push FILE`, `nfd publish --from-file`, the config file, the kubeconfig (and the files it
names), the theme named by --theme, clouds.yaml; entries of --features-dir / --hooks-dir are skipped, as nfd-worker
skips anything but a regular file. `-` reads standard input where a command takes a file. Each case runs the real
CLI in a subprocess whose FIFO no one ever writes: a hang is a timeout, a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from console.userfile import NotRegularFile, open_regular

REPO = Path(__file__).resolve().parents[2]
NF = REPO / "tests" / "fixtures" / "nfd" / "nodefeature-worker-1.yaml"
RULE = ("apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata: {name: r}\nspec:\n  rules:\n"
        "  - name: one\n    labels: {one: 'true'}\n")
TIMEOUT = 30  # the refusal takes well under a second; a wait on the FIFO never ends


def _run(tmp: Path, argv: list[str], stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CONSOLE_", "OS_"))}
    base |= {"XDG_CONFIG_HOME": str(tmp / "cfg"), "XDG_STATE_HOME": str(tmp / "state"),
             "XDG_DATA_HOME": str(tmp / "data"), "KUBECONFIG": str(tmp / "no-kubeconfig"), **env}
    return subprocess.run([sys.executable, "-m", "console", *argv], capture_output=True, text=True, env=base,
                          timeout=TIMEOUT, input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                          cwd=tmp)


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "special.yaml"
    os.mkfifo(path)
    return path


def _one_line(proc: subprocess.CompletedProcess[str], fifo: Path, code: int) -> str:
    out = f"rc={proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    assert "Traceback" not in proc.stderr, out
    assert proc.returncode == code, out
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, out
    assert str(fifo) in lines[0] and "not a regular file (a FIFO)" in lines[0], out
    return lines[0]


# argv (FIFO as {f}), exit code, JSON error kind (None: the command has no -o json)
CASES = {
    "validate": (["nfd", "validate", "-f", "{f}"], 1, "bad-file"),
    "dryrun-rule": (["nfd", "dryrun", "--rule", "{f}", "-n", str(NF)], 1, "bad-file"),
    "dryrun-nodefeature": (["nfd", "dryrun", "--rule", "{rule}", "--nodefeature", "{f}"], 1, "bad-file"),
    "dryrun-master-config": (["nfd", "dryrun", "--rule", "{rule}", "-n", str(NF), "--master-config", "{f}"], 2,
                             "bad-config"),
    "local-worker-config": (["nfd", "local", "--features-dir", "{tmp}", "--worker-config", "{f}"], 2, "bad-config"),
    "apply": (["nfd", "apply", "-f", "{f}", "--yes"], 2, "bad-file"),
    "files-push": (["nfd", "files", "push", "{f}", "--kind", "feature", "--node", "n1", "--yes"], 2, "bad-file"),
    "publish-from-file": (["nfd", "publish", "--node", "n1", "--from-file", "{f}", "--kind", "feature", "--yes"], 2,
                          "bad-file"),
    "kubeconfig-flag": (["--kubeconfig", "{f}", "get", "nodes"], 2, "bad-kubeconfig"),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_fifo_argument_is_refused_naming_it(tmp_path: Path, fifo: Path, case: str, as_json: bool) -> None:
    argv, code, kind = CASES[case]
    rule = tmp_path / "rule.yaml"
    rule.write_text(RULE)
    args = [a.format(f=fifo, rule=rule, tmp=tmp_path) for a in argv] + (["-o", "json"] if as_json else [])
    proc = _run(tmp_path, args)
    line = _one_line(proc, fifo, code)
    if as_json:
        doc = json.loads(proc.stdout)
        assert doc == {"status": "error", "error": kind, "message": doc["message"], "exit_code": code}
        assert str(fifo) in doc["message"] and doc["message"] in line
    else:
        assert proc.stdout == ""


def test_kubeconfig_variable_naming_a_fifo(tmp_path: Path, fifo: Path) -> None:
    _one_line(_run(tmp_path, ["get", "nodes"], KUBECONFIG=str(fifo)), fifo, 2)


def test_a_file_the_kubeconfig_names_that_is_a_fifo(tmp_path: Path, fifo: Path) -> None:
    """certificate-authority / client-certificate / client-key / tokenFile are read when connecting."""
    kc = tmp_path / "kubeconfig"
    kc.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                  "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1', certificate-authority: "
                  f"{fifo}}}}}]\nusers: [{{name: u, user: {{token: x}}}}]\n"
                  "contexts: [{name: c, context: {cluster: k, user: u}}]\n")
    line = _one_line(_run(tmp_path, ["get", "nodes"], KUBECONFIG=str(kc)), fifo, 2)
    assert "certificate-authority" in line


def test_config_file_that_is_a_fifo(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg" / "console" / "config.yaml"
    cfg.parent.mkdir(parents=True)
    os.mkfifo(cfg)
    for argv in (["get", "nodes"], ["scale-up", "n1", "--flavor", "m1.large", "--dry-run"], []):
        _one_line(_run(tmp_path, argv), cfg, 2)


def test_theme_file_that_is_a_fifo(tmp_path: Path) -> None:
    theme = tmp_path / "data" / "console" / "themes" / "mine.yaml"
    theme.parent.mkdir(parents=True)
    os.mkfifo(theme)
    for argv in (["--theme", "mine", "get", "nodes"], ["--theme", "mine"]):  # headless, and the TUI's start
        _one_line(_run(tmp_path, argv), theme, 2)


def test_clouds_yaml_that_is_a_fifo(tmp_path: Path, fifo: Path) -> None:
    """openstacksdk opens every clouds.yaml it finds: the console checks them before it hands over."""
    from console.faults import classify
    from console.infra.openstack import OpenStackBackend

    env = {"OS_CLIENT_CONFIG_FILE": str(fifo), "OS_CLOUD": "lab"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with pytest.raises(Exception) as caught:
            _ = OpenStackBackend("lab").conn
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    fault = classify(caught.value)
    assert fault is not None and fault.kind == "bad-clouds-yaml" and fault.exit_code == 2
    assert str(fifo) in fault.message and "not a regular file" in fault.message


def test_features_and_hooks_dirs_skip_a_fifo(tmp_path: Path) -> None:
    """nfd-worker reads only regular files of features.d (a FIFO would hang its discovery): the preview skips it
    and reads the others."""
    feats, hooks = tmp_path / "features.d", tmp_path / "source.d"
    feats.mkdir()
    hooks.mkdir()
    os.mkfifo(feats / "a-fifo")
    os.mkfifo(hooks / "h-fifo")
    (feats / "b-file").write_text("b=1\n")
    proc = _run(tmp_path, ["nfd", "local", "--features-dir", str(feats), "--hooks-dir", str(hooks),
                           "--nfd-version", "v0.16.0", "--hooks-enabled", "true", "-o", "json"])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["labels"] == {"feature.node.kubernetes.io/b": "1"}


def test_dash_reads_standard_input(tmp_path: Path) -> None:
    proc = _run(tmp_path, ["nfd", "validate", "-f", "-", "-o", "json"], stdin=RULE)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["objects"][0]["name"] == "r"


def test_a_character_device_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    """/dev/tty would wait for a line typed; opening some devices acts. Refused from the stat alone."""
    with pytest.raises(NotRegularFile) as caught:
        open_regular("/dev/null")
    assert caught.value.strerror == "not a regular file (a character device)"
    assert caught.value.filename == "/dev/null"


def test_a_regular_file_opens_blocking(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    with open_regular(path) as f:
        assert f.read() == b"x" * 10
        assert os.get_blocking(f.fileno())


def test_a_fifo_in_the_local_hook_store_is_refused_naming_it(tmp_path: Path) -> None:
    """`hook_store: directory`: the editors read hook_dir's files by name; a FIFO there is an error naming it."""
    from console.kube.nfdstore import DirectoryHookStore, NfdStoreError

    hooks = tmp_path / "source.d"
    hooks.mkdir()
    (tmp_path / "features.d").mkdir()
    os.mkfifo(hooks / "probe")
    store = DirectoryHookStore(hooks)
    with pytest.raises(NfdStoreError, match=r"probe: not a regular file \(a FIFO\)"):
        store.get("hook", "probe")
