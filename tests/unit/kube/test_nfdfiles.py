"""HostPathTarget's scripts run by a real `sh` (dash, and busybox sh with only busybox's applets on PATH: the
default node-debug image) against a temp directory standing for each node's features.d / source.d.

References: source/local/local.go of kubernetes-sigs/node-feature-discovery (MaxFeatureFileSize = 65536,
`filestat.Size() > MaxFeatureFileSize` skips; `strings.HasPrefix(fileName, ".")` skipped from v0.15 on, read
before), rename(2) atomicity for `mv -f` within one filesystem.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from console.audit import AuditLog
from console.guard import Guard, ReadOnly
from console.kube.nfdfiles import (
    Difference,
    FileState,
    FileTargetError,
    HostPathTarget,
    NodeFile,
    NodeListing,
    check_name,
    differences,
    worker_runs_on,
)
from console.kube.nodeshell import ExecResult, NodeAccessError
from console.nfd.deployment import Mount, NfdDeployment
from console.nfd.versions import parse_version

HOST_DIR = "/etc/kubernetes/node-feature-discovery/features.d"
HOOK_DIR = "/etc/kubernetes/node-feature-discovery/source.d"


@pytest.fixture(scope="session")
def busybox_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    bb = shutil.which("busybox")
    if bb is None:
        pytest.skip("busybox is not installed (apt-get install busybox)")
    d = tmp_path_factory.mktemp("busybox-bin")
    subprocess.run([bb, "--install", "-s", str(d)], check=True)
    return str(d)


@pytest.fixture(params=["dash", "busybox"])
def shell(request: pytest.FixtureRequest) -> tuple[list[str], str]:
    """(argv before -c, PATH): dash with the coreutils, or busybox sh seeing only busybox's applets."""
    if request.param == "busybox":
        path = request.getfixturevalue("busybox_path")
        return [f"{path}/sh"], path
    return ["/bin/sh"], os.environ.get("PATH", "/usr/bin:/bin")


class LocalNodes:
    """A NodeAccess that runs the script with a real sh here, the node's `/` being tmp/<node>/ (the script's
    absolute paths rewritten to it): the scripts meet real files, real rename, real permissions."""

    method = "local-sh"

    def __init__(self, root: Path, shell: tuple[list[str], str], refuse: tuple[str, ...] = ()) -> None:
        self.root, (self.argv, self.path), self.refuse = root, shell, refuse
        self.runs: list[str] = []
        self.shims: Path | None = None

    def node_dir(self, node: str, path: str = HOST_DIR) -> Path:
        return self.root / node / path.lstrip("/")

    def prepare(self, node: str) -> list[str]:
        return []

    def run(self, node: str, script: str, *, timeout: float = 60.0) -> ExecResult:
        self.runs.append(node)
        if node in self.refuse:
            raise NodeAccessError(f"the node-debug pod was refused by PodSecurity admission on {node}")
        script = script.replace("/etc/kubernetes", str(self.root / node / "etc/kubernetes"))
        path = f"{self.shims}:{self.path}" if self.shims else self.path
        p = subprocess.run([*self.argv, "-c", script], capture_output=True, text=True, timeout=timeout,
                           env={"PATH": path, "LC_ALL": "C"})
        return ExecResult(p.returncode, p.stdout, stderr=p.stderr)


def deployment(version: str = "v0.19.0", host_dir: str = HOST_DIR, kind: str = "feature") -> NfdDeployment:
    return NfdDeployment(namespace="nfd", version=parse_version(version), version_source="test", master=None,
                         worker=None, node_feature_api=True,
                         mounts={kind: Mount(kind, "hostPath", host_dir, volume="features-d", host_path=host_dir)})


@pytest.fixture
def audit(tmp_path: Path) -> AuditLog:
    return AuditLog(tmp_path / "audit.log")


def target(nodes: LocalNodes, audit: AuditLog, *, kind: str = "feature", version: str = "v0.19.0",
           read_only: bool = False) -> HostPathTarget:
    d = HOST_DIR if kind == "feature" else HOOK_DIR
    return HostPathTarget(deployment(version, d, kind), kind, api_client=None, node_access=nodes,
                          guard=Guard(read_only=read_only, audit=audit))


NODES = ["w1", "w2", "w3"]


def shown(t: HostPathTarget, name: str, nodes: list[str]) -> dict[str, str | None]:
    """Each node's version of `name` as a listing shows it: what a caller (the TUI, the CLI) carries."""
    return {ls.node: t.version(ls, name) for ls in t.list(nodes)}


def push(t: HostPathTarget, name: str, content: str, nodes: list[str]) -> list[Any]:
    return t.push(name, content, nodes, expected=shown(t, name, nodes))


def remove(t: HostPathTarget, name: str, nodes: list[str]) -> list[Any]:
    return t.remove(name, nodes, expected=shown(t, name, nodes))


def test_push_writes_each_node_atomically_and_audits_the_batch(tmp_path, shell, audit):
    nodes = LocalNodes(tmp_path / "nodes", shell)
    t = target(nodes, audit)
    assert t.description == f"hostPath {HOST_DIR} on each node"
    res = push(t, "rack.feature", "rack=r42\n", NODES)
    assert [(r.node, r.ok, r.changed, r.error) for r in res] == [(n, True, True, "") for n in NODES]
    for n in NODES:
        d = nodes.node_dir(n)
        assert sorted(os.listdir(d)) == ["rack.feature"]  # no temp left
        f = d / "rack.feature"
        assert f.read_text() == "rack=r42\n"
        assert stat.S_IMODE(f.stat().st_mode) == 0o644
    intent, outcome = audit.entries()
    assert intent["action"] == outcome["action"] == "nfd.file.push" and intent["id"] == outcome["id"]
    assert "w1, w2, w3" in intent["target"] and outcome["result"] == "ok"
    # the version each node's write replaced, on disk before the write: none there yet
    assert intent["before"] == {"sha256": {"w1": "absent", "w2": "absent", "w3": "absent"}}
    digest = hashlib.sha256(b"rack=r42\n").hexdigest()
    assert outcome["after"]["w2"] == {"node": "w2", "ok": True, "changed": True, "error": "", "version": digest}


def test_same_content_is_a_no_op_nothing_written(tmp_path, shell, audit):
    nodes = LocalNodes(tmp_path / "nodes", shell)
    t = target(nodes, audit)
    push(t, "rack.feature", "rack=r42\n", ["w1"])
    f = nodes.node_dir("w1") / "rack.feature"
    before = f.stat()
    res = push(t, "rack.feature", "rack=r42\n", ["w1"])
    assert (res[0].ok, res[0].changed) == (True, False)
    after = f.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # not even rewritten
    res = push(t, "rack.feature", "rack=r43\n", ["w1"])
    assert res[0].changed and f.read_text() == "rack=r43\n" and f.stat().st_ino != before.st_ino  # renamed onto


def test_hooks_are_executable_and_read_back(tmp_path, shell, audit):
    nodes = LocalNodes(tmp_path / "nodes", shell)
    t = target(nodes, audit, kind="hook", version="v0.8.2")
    script = "#!/bin/sh\necho kernel.pid_max=$(cat /proc/sys/kernel/pid_max)\n"
    assert push(t, "my-script", script, ["w1"])[0].changed
    f = nodes.node_dir("w1", HOOK_DIR) / "my-script"
    assert stat.S_IMODE(f.stat().st_mode) == 0o755
    assert t.read("w1", "my-script") == FileState(script, hashlib.sha256(script.encode()).hexdigest())
    assert t.read("w1", "other") == FileState(None, "")
    # same content with the wrong mode is rewritten with the right one
    f.chmod(0o644)
    assert push(t, "my-script", script, ["w1"])[0].changed and stat.S_IMODE(f.stat().st_mode) == 0o755


def test_list_reports_name_size_hash_mode_mtime_and_skips_what_nfd_skips(tmp_path, shell, audit):
    nodes = LocalNodes(tmp_path / "nodes", shell)
    t = target(nodes, audit)
    push(t, "a.feature", "a=1\n", ["w1", "w2"])
    push(t, "b.feature", "b=1\n", ["w1"])
    push(t, "b.feature", "b=2\n", ["w2"])
    d1 = nodes.node_dir("w1")
    (d1 / ".console-nfd.abc123").write_text("half")  # a killed run's temp: not a file nfd-worker reads (v0.15+)
    (d1 / "sub").mkdir()  # nfd-worker reads regular files only
    (d1 / "link").symlink_to(d1 / "a.feature")  # os.Stat follows links: NFD reads it
    listings = t.list(["w1", "w2", "w3"])
    by = {ls.node: ls for ls in listings}
    assert by["w3"].files == () and by["w3"].error == ""  # no directory yet: nothing there
    names = [f.name for f in by["w1"].files]
    assert names == ["a.feature", "b.feature", "link"]
    a = by["w1"].files[0]
    st = (d1 / "a.feature").stat()
    assert (a.size, a.mode, a.sha256, int(a.mtime)) == (4, 0o644, hashlib.sha256(b"a=1\n").hexdigest(),
                                                          int(st.st_mtime))
    diffs = {(d.name): d for d in differences(listings)}
    assert set(diffs) == {"a.feature", "b.feature", "link"}
    assert diffs["a.feature"].missing_on == ("w3",)
    assert sorted(diffs["b.feature"].by_hash.values()) == [("w1",), ("w2",)]


def test_oversize_refused_before_any_node_or_audit(tmp_path, shell, audit):
    nodes = LocalNodes(tmp_path / "nodes", shell)
    t = target(nodes, audit)
    with pytest.raises(FileTargetError, match=r"65537 bytes.*65536"):
        t.push("big.feature", "x" * 65537, NODES, expected={})
    assert nodes.runs == [] and not audit.path.exists()
    assert push(t, "limit.feature", "x" * 65535 + "\n", ["w1"])[0].ok  # exactly 65536: NFD reads it
    assert (nodes.node_dir("w1") / "limit.feature").stat().st_size == 65536


def test_read_only_refuses_before_any_node(tmp_path, shell, audit):
    nodes = LocalNodes(tmp_path / "nodes", shell)
    t = target(nodes, audit, read_only=True)
    with pytest.raises(ReadOnly):
        t.push("rack.feature", "rack=r42\n", NODES, expected=dict.fromkeys(NODES, ""))
    with pytest.raises(ReadOnly):
        t.remove("rack.feature", NODES, expected=dict.fromkeys(NODES, ""))
    assert nodes.runs == [] and not audit.path.exists()


def _shim(d: Path, name: str, body: str) -> None:
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(0o755)


def test_a_failed_rename_leaves_nothing_half_written(tmp_path, shell, audit):
    """mv fails after the temp is complete: the old file is intact and the temp is gone (the EXIT trap)."""
    nodes = LocalNodes(tmp_path / "nodes", shell)
    t = target(nodes, audit)
    push(t, "rack.feature", "rack=old\n", ["w1", "w2"])
    nodes.shims = tmp_path / "shims"
    _shim(nodes.shims, "mv", 'echo "mv: cannot move: Operation not permitted" >&2; exit 1\n')
    res = push(t, "rack.feature", "rack=new\n", ["w1", "w2"])
    assert [r.ok for r in res] == [False, False]
    assert "cannot rename" in res[0].error and "rack.feature" in res[0].error
    for n in ("w1", "w2"):
        d = nodes.node_dir(n)
        assert os.listdir(d) == ["rack.feature"] and (d / "rack.feature").read_text() == "rack=old\n"
    outcome = audit.entries()[-1]
    assert outcome["result"] == "error" and outcome["after"]["w1"]["ok"] is False


def test_a_failed_write_leaves_nothing(tmp_path, shell, audit):
    """base64 -d fails part-way (a full disk): no temp, no target file."""
    nodes = LocalNodes(tmp_path / "nodes", shell)
    t = target(nodes, audit)
    nodes.shims = tmp_path / "shims"
    _shim(nodes.shims, "base64", 'printf half; echo "base64: write error: No space left on device" >&2; exit 1\n')
    res = push(t, "rack.feature", "rack=r42\n", ["w1"])
    assert not res[0].ok and "cannot write" in res[0].error
    assert os.listdir(nodes.node_dir("w1")) == []


@pytest.mark.parametrize(("version", "temp_in_dir"), [("v0.19.0", True), ("v0.8.2", False)])
def test_temp_file_is_where_nfd_worker_does_not_read_it(tmp_path, shell, audit, version, temp_in_dir):
    """v0.15+ skips '.'-names, so the temp is a dot-file beside the target; older versions read every name, so
    the temp goes to the parent directory (same filesystem): the worker never sees a half-written file."""
    nodes = LocalNodes(tmp_path / "nodes", shell)
    t = target(nodes, audit, version=version)
    seen = tmp_path / "seen"
    nodes.shims = tmp_path / "shims"
    real_mv = shutil.which("mv", path=nodes.path)
    _shim(nodes.shims, "mv", f'ls -a "$(dirname "$3")" > {seen}; ls -a "$(dirname "$2")" >> {seen}; '
                             f'echo "src $2" >> {seen}; exec {real_mv} "$@"\n')
    assert push(t, "rack.feature", "rack=r42\n", ["w1"])[0].ok
    text = seen.read_text()
    src = next(line for line in text.splitlines() if line.startswith("src "))[4:]
    assert (Path(src).parent == nodes.node_dir("w1")) is temp_in_dir
    assert Path(src).name.startswith(".console-nfd.")
    assert os.listdir(nodes.node_dir("w1")) == ["rack.feature"]


def test_one_node_refused_the_others_written(tmp_path, shell, audit):
    nodes = LocalNodes(tmp_path / "nodes", shell, refuse=("w2",))
    t = target(nodes, audit)
    res = {r.node: r for r in t.push("rack.feature", "rack=r42\n", NODES, expected=dict.fromkeys(NODES, ""))}
    assert res["w2"].ok is False and "PodSecurity" in res["w2"].error
    assert res["w1"].ok and res["w3"].ok
    assert not nodes.node_dir("w2").exists()
    assert audit.entries()[-1]["result"] == "partial"
    listing = {ls.node: ls for ls in t.list(NODES)}
    assert "PodSecurity" in listing["w2"].error and listing["w2"].files == ()
    assert differences(list(listing.values())) == []  # an unreadable node is not "missing" the file


def test_remove(tmp_path, shell, audit):
    nodes = LocalNodes(tmp_path / "nodes", shell)
    t = target(nodes, audit)
    push(t, "rack.feature", "rack=r42\n", ["w1"])
    res = remove(t, "rack.feature", ["w1", "w2"])
    assert [(r.ok, r.changed) for r in res] == [(True, True), (True, False)]
    assert not (nodes.node_dir("w1") / "rack.feature").exists()
    assert audit.entries()[-1]["action"] == "nfd.file.remove"


def test_script_output_cut_short_is_a_failure(tmp_path, audit):
    class Cut(LocalNodes):
        def run(self, node, script, *, timeout=60.0):
            return ExecResult(0, "@@nfdfiles was abc 644\n", log_cut=True)

    t = target(Cut(tmp_path, (["/bin/sh"], "/bin")), audit)
    res = t.push("rack.feature", "rack=r42\n", ["w1"], expected={"w1": ""})
    assert not res[0].ok and "before its end" in res[0].error


@pytest.mark.parametrize("name", ["", ".hidden", "a/b", "..", "sp ace", "x" * 254, "tab\tname", "ü.feature"])
def test_names_nfd_would_not_read_as_given(name):
    with pytest.raises(FileTargetError):
        check_name(name)


@pytest.mark.parametrize("name", ["rack.feature", "my-script", "GPU_info", "a", "x" * 253])
def test_plain_names(name):
    check_name(name)


def test_differences():
    f = lambda node, name, h: NodeFile(node, "feature", name, 1, h, 0o644, 0.0)  # noqa: E731
    listings = [NodeListing("a", (f("a", "x", "h1"), f("a", "y", "h1"))),
                NodeListing("b", (f("b", "x", "h2"), f("b", "y", "h1"))),
                NodeListing("c", (f("c", "y", "h1"),)),
                NodeListing("d", (), error="unreachable")]
    assert differences(listings) == [Difference("feature", "x", {"h1": ("a",), "h2": ("b",)}, ("c",))]


class _Worker:
    def __init__(self, node_selector=None, tolerations=(), affinity=None):
        self.node_selector, self.tolerations, self.affinity = node_selector or {}, tolerations, affinity or {}


def _node(name, labels=None, taints=()):
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": list(taints)}, "status": {}}


def test_worker_placement_follows_the_daemonset_pod_template():
    cp_taint = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
    cp = _node("cp", {"node-role.kubernetes.io/control-plane": ""}, [cp_taint])
    w = _node("w", {"pool": "gpu"})
    assert not worker_runs_on(_Worker(), cp) and worker_runs_on(_Worker(), w)
    assert worker_runs_on(_Worker(tolerations=({"operator": "Exists", "effect": "NoSchedule"},)), cp)
    assert worker_runs_on(_Worker(tolerations=({"key": cp_taint["key"], "operator": "Exists"},)), cp)
    assert not worker_runs_on(_Worker(node_selector={"pool": "cpu"}), w)
    # the DaemonSet controller's own tolerations (daemonset_util.go): an unschedulable (cordoned) node still runs it
    cordoned = _node("c", {}, [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}])
    assert worker_runs_on(_Worker(), cordoned)
    assert worker_runs_on(None, cp)


def test_the_largest_push_fits_one_exec_argument():
    """The script is one argv string (`sh -c SCRIPT` in the debug pod, ssh's remote command): Linux caps one
    argument at MAX_ARG_STRLEN = 32 pages = 131072 bytes (include/uapi/linux/binfmts.h)."""
    from console.kube.nfdfiles_sh import push_script

    script = push_script(HOST_DIR, "x" * 253, bytes(range(256)) * 256, 0o755, temp_outside=True, expect="f" * 64)
    assert len(script.encode()) < 131072


def test_labels_match():
    from console.kube.nfdfiles import PRESENT, labels_match

    assert labels_match({"a": "1", "b": None}, {"a": "1", "b": None})
    assert labels_match({"a": "7"}, {"a": PRESENT}) and not labels_match({"a": None}, {"a": PRESENT})
    assert not labels_match({"a": "2"}, {"a": "1"}) and not labels_match({"a": "1"}, {"a": None})


# -- optimistic concurrency: every write carries the version the caller showed (issue 20, point 1) ------------


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_file_changed_since_it_was_read_is_a_conflict_and_left_as_it_is(tmp_path, shell, audit):
    """Admin A lists the nodes (the versions the editor loads); admin B writes w1's file; A's push with what A
    was shown writes w2 and w3 and leaves w1 as B made it, its result a conflict carrying B's content and version,
    which A's overwrite then carries (compared again on the node). The audit intent names each version replaced."""
    nodes = LocalNodes(tmp_path / "nodes", shell)
    t = target(nodes, audit)
    push(t, "inventory", "rack=r1\n", NODES)
    seen = shown(t, "inventory", NODES)
    assert seen == dict.fromkeys(NODES, _sha("rack=r1\n"))
    theirs = nodes.node_dir("w1") / "inventory"
    theirs.write_text("rack=theirs\n")  # B, between A's read and A's write
    res = {r.node: r for r in t.push("inventory", "rack=mine\n", NODES, expected=seen)}
    assert (res["w1"].ok, res["w1"].changed, res["w1"].conflict) == (False, False, True)
    assert (res["w1"].current, res["w1"].version) == ("rack=theirs\n", _sha("rack=theirs\n"))
    assert "changed since it was read" in res["w1"].error and "w1" in res["w1"].error
    assert theirs.read_text() == "rack=theirs\n"  # B's change survives
    assert all(res[n].ok and res[n].changed for n in ("w2", "w3"))
    assert (nodes.node_dir("w2") / "inventory").read_text() == "rack=mine\n"
    intent, outcome = audit.entries()[-2:]
    assert intent["before"] == {"sha256": dict.fromkeys(NODES, _sha("rack=r1\n"))}  # what A's write replaces
    assert outcome["result"] == "partial" and outcome["after"]["w1"]["conflict"] is True
    assert sorted(os.listdir(nodes.node_dir("w1"))) == ["inventory"]  # no temp left

    # overwrite with mine: carries B's version; it is still there, so A's content is written
    again = t.push("inventory", "rack=mine\n", ["w1"], expected={"w1": res["w1"].version})
    assert (again[0].ok, again[0].changed) == (True, True) and theirs.read_text() == "rack=mine\n"
    assert audit.entries()[-2]["before"] == {"sha256": {"w1": _sha("rack=theirs\n")}}


def test_a_file_created_or_removed_since_is_a_conflict_too(tmp_path, shell, audit):
    nodes = LocalNodes(tmp_path / "nodes", shell)
    t = target(nodes, audit)
    seen = shown(t, "new.feature", ["w1"])
    assert seen == {"w1": ""}  # no such file: the version of "none"
    d = nodes.node_dir("w1")
    d.mkdir(parents=True)
    (d / "new.feature").write_text("theirs=1\n")
    (res,) = t.push("new.feature", "mine=1\n", ["w1"], expected=seen)
    assert res.conflict and res.current == "theirs=1\n" and (d / "new.feature").read_text() == "theirs=1\n"
    # their content equal to mine: nothing to overwrite, so no conflict
    (same,) = t.push("new.feature", "theirs=1\n", ["w1"], expected=seen)
    assert (same.ok, same.changed, same.conflict) == (True, False, False)

    seen = shown(t, "new.feature", ["w1"])
    (d / "new.feature").unlink()  # B removes it
    (res,) = t.push("new.feature", "mine=2\n", ["w1"], expected=seen)
    assert res.conflict and (res.current, res.version) == (None, "") and not (d / "new.feature").exists()
    assert "no file" in res.error


def test_remove_carries_the_version_too(tmp_path, shell, audit):
    nodes = LocalNodes(tmp_path / "nodes", shell)
    t = target(nodes, audit)
    push(t, "rack.feature", "rack=r1\n", ["w1", "w2"])
    seen = shown(t, "rack.feature", ["w1", "w2"])
    (nodes.node_dir("w1") / "rack.feature").write_text("rack=theirs\n")
    (nodes.node_dir("w2") / "rack.feature").unlink()  # already gone: what the removal wanted
    res = {r.node: r for r in t.remove("rack.feature", ["w1", "w2"], expected=seen)}
    assert res["w1"].conflict and res["w1"].current == "rack=theirs\n"
    assert (nodes.node_dir("w1") / "rack.feature").read_text() == "rack=theirs\n"
    assert (res["w2"].ok, res["w2"].changed, res["w2"].conflict) == (True, False, False)
    assert audit.entries()[-1]["result"] == "partial"
    (gone,) = t.remove("rack.feature", ["w1"], expected={"w1": res["w1"].version})
    assert gone.ok and gone.changed and not (nodes.node_dir("w1") / "rack.feature").exists()


def test_a_node_whose_version_was_not_read_is_not_written(tmp_path, shell, audit):
    nodes = LocalNodes(tmp_path / "nodes", shell)
    t = target(nodes, audit)
    res = {r.node: r for r in t.push("rack.feature", "rack=r1\n", ["w1", "w2"], expected={"w1": ""})}
    assert res["w1"].ok and not res["w2"].ok and not res["w2"].conflict
    assert "was not read" in res["w2"].error and nodes.runs == ["w1"]  # w2 not even reached
    assert not nodes.node_dir("w2").exists()
    assert audit.entries()[0]["before"] == {"sha256": {"w1": "absent", "w2": None}}


def test_two_writers_of_one_node_cannot_both_pass_the_check(tmp_path, audit):
    """Two console pushes of the same file to the same node, both carrying the version they read: each compares and
    renames in one script under flock(1) on the directory, so the second compares after the first renamed and
    meets a conflict (without the lock both would compare first, then both rename: B's write lost). `mv` is slowed
    so the two scripts overlap. flock is util-linux's, as on a Kubernetes node (kubelet's mount and nsenter)."""
    import threading

    if shutil.which("flock") is None:
        pytest.skip("flock (util-linux) is not installed")
    nodes = LocalNodes(tmp_path / "nodes", (["/bin/sh"], os.environ.get("PATH", "/usr/bin:/bin")))
    t = target(nodes, audit)
    push(t, "inventory", "rack=r1\n", ["w1"])
    seen = shown(t, "inventory", ["w1"])
    nodes.shims = tmp_path / "shims"
    _shim(nodes.shims, "mv", f"sleep 0.5; exec {shutil.which('mv')} \"$@\"\n")
    results: dict[str, Any] = {}
    started = threading.Barrier(2)

    def write(who: str) -> None:
        started.wait()
        results[who] = t.push("inventory", f"rack={who}\n", ["w1"], expected=seen)[0]

    threads = [threading.Thread(target=write, args=(who,)) for who in ("a", "b")]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    won = [w for w, r in results.items() if r.ok and r.changed]
    lost = [w for w, r in results.items() if r.conflict]
    assert len(won) == 1 and len(lost) == 1, results
    final = (nodes.node_dir("w1") / "inventory").read_text()
    assert final == f"rack={won[0]}\n" and results[lost[0]].current == final
