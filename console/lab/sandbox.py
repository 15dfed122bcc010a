"""Commands on a lab node, run for real: bubblewrap over the node's directory tree (issue 11, deliverable 7).

A command sent to a lab node (a debug pod's container, an SSH session, an NFD hook) runs as a real process
under bwrap (https://github.com/containers/bubblewrap, Debian package `bubblewrap`): the lab host's /usr
read-only (and /bin, /sbin, /lib, /lib64 as the host has them, symlinks into /usr on Debian), so `sh`,
`cat`, `sha256sum`, `lscpu`, `tee`… are the real tools, over the node's `GuestRoot`:

- /etc, /sys, /var, /run, /tmp, /root, /boot are the node's tree (read-write);
- /proc is a fresh procfs of the sandbox's own PID namespace with the node's files (cpuinfo, meminfo,
  version, sys/kernel/pid_max, …) bound over the lab host's, so nothing of the host's CPUs or memory shows;
- /host is the node's root (`kubectl debug node --profile=sysadmin` mounts the host / there; `chroot /host`
  works, with the host /usr bound inside it), and /host-proc, /host-sys, /host-etc, /host-boot,
  /host-usr/lib, /host-lib as nfd-worker's container sees the host (NFD pkg/utils/hostpath, its
  worker DaemonSet's volumes);
- /usr/local/sbin holds the shims for what the lab simulates (`guestservices`: systemctl, journalctl,
  nsenter, nproc, uname); the service requests arrive in a per-run directory bound at /run/console-lab;
- /sys/devices/system/cpu is the node's FUSE view (`cpufs`) when FUSE is available, so CPU hotplug
  writes act before they return.

`--unshare-pid --unshare-uts --hostname NODE --die-with-parent --new-session`, a clean environment, a
timeout that kills the whole tree (killing bwrap kills its PID namespace's init, and with it every process
in the namespace), and a cap on the output kept. While the command runs the runner serves the shims'
requests and (without FUSE) polls the node's `cpuN/online` files (`GuestRoot.apply_cpu_writes`).
"""

from __future__ import annotations

import codecs
import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from console.lab.guestroot import NFD_FEATURES_D, NFD_SOURCE_D, GuestRoot
from console.lab.guestservices import CONTROL_DIR, SHIMS, KubeletControl, serve

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
POLL = 0.02  # seconds between looks at the cpuN/online files and the shims' requests
DEFAULT_MAX_OUTPUT = 1 << 20
NODE_DIRS = ("/etc", "/sys", "/var", "/run", "/tmp", "/root", "/boot")
# nfd-worker's view of the host (NFD deployment/base/worker-daemonset, pkg/utils/hostpath: prefix /host-)
NFD_HOST_DIRS = {"/host-proc": "/proc", "/host-sys": "/sys", "/host-etc": "/etc", "/host-boot": "/boot"}

Sink = Callable[[str], None]


class SandboxError(Exception):
    """The sandbox could not start (bwrap missing or refused); the message says what to install."""


@dataclass(frozen=True)
class Result:
    code: int | None  # None: killed on the timeout (or on `cancel`)
    stdout: str
    stderr: str  # "" when stderr was merged into stdout
    timed_out: bool = False
    truncated: bool = False  # output beyond max_output was dropped


def bwrap_path() -> str:
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxError("bwrap (bubblewrap) is not installed: the lab runs node commands in it. "
                           "Install the Debian package bubblewrap (./dev installs it)")
    return path


def _host_links() -> list[str]:
    """/bin, /sbin, /lib, /lib64 … as the lab host has them (symlinks into /usr on merged-/usr Debian)."""
    args: list[str] = []
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = Path("/") / name
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), f"/{name}"]
        elif p.is_dir():
            args += ["--ro-bind", str(p), f"/{name}"]
    return args


def _proc_overlays(root: GuestRoot, *, composed: bool = False) -> list[str]:
    """Bind each of the node's /proc files over the sandbox procfs's file of the same name; `composed`: also the
    node's top-level files the lab host's procfs lacks (see `_composed_proc`)."""
    args: list[str] = []
    base = root.path("/proc")
    for dirpath, _dirs, names in os.walk(base):
        for name in sorted(names):
            rel = (Path(dirpath) / name).relative_to(base)
            top_level = len(rel.parts) == 1
            if (Path("/proc") / rel).is_file() or (composed and top_level):  # procfs has the same names everywhere
                args += ["--bind", str(base / rel), f"/proc/{rel.as_posix()}"]
    return args


# the lab host kernel's own build facts: a node's kernel is another (an Ubuntu kernel has no /proc/config.gz)
HOST_KERNEL_ONLY = ("config.gz",)
LAB_PROC = "/.lab-proc"


def _composed_proc(root: GuestRoot) -> list[str]:
    """/proc as a directory of links into a procfs mounted at LAB_PROC, the node's top-level files in place of the
    lab host's: a kernel built without modules has no /proc/modules and procfs takes no new files, so a program
    that reads the node's /proc/modules (nfd-worker: never through its /host- prefix) needs /proc to be a plain
    directory. /proc/self, /proc/sys, … are procfs's own; the /proc/<pid> of a process started later is not there
    (`ps` needs the plain procfs: the default)."""
    node = {p.name for p in root.path("/proc").iterdir() if p.is_file()} if root.path("/proc").is_dir() else set()
    args = ["--proc", LAB_PROC, "--dir", "/proc"]
    for name in sorted(os.listdir("/proc")):
        if name.isdigit() or name in node or name in HOST_KERNEL_ONLY:
            continue
        # relative: bwrap makes the mount points of later binds through these links before it enters the root
        args += ["--symlink", f"..{LAB_PROC}/{name}", f"/proc/{name}"]
    return args


def bwrap_args(root: GuestRoot, run_dir: Path, *, hostname: str, env: Mapping[str, str], cwd: str = "/",
               hook: bool = False, source_d: Path | None = None, binds: Mapping[str, Path] | None = None,
               node_proc: bool = False, rw_binds: Mapping[str, Path] | None = None,
               unshare_net: bool = False) -> list[str]:
    """The bwrap command line (without the command) for one run on `root`; `source_d`: the host directory a
    hook's nfd-worker has at source.d when it is not the node's own (a ConfigMap volume's projection);
    `binds`: more of the lab host's files or directories, read-only, at the given paths (a container image's
    programs, a pod's volumes), `rw_binds` writable ones; `node_proc`: /proc composed from the node's files
    (`_composed_proc`); `unshare_net`: a network namespace of its own, with only a loopback (a pod's,
    console/lab/podnet.py)."""
    shims, control = run_dir / "bin", run_dir / "ctl"
    nfd = "/etc/kubernetes/node-feature-discovery"
    args = [bwrap_path(), "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-uts",
            "--unshare-ipc", "--hostname", hostname, "--clearenv"]
    if unshare_net:
        args.append("--unshare-net")
    if os.geteuid() != 0:  # be root in the node, as node access is
        args += ["--unshare-user", "--uid", "0", "--gid", "0"]
    # root without its other powers (bwrap run by root keeps them all): the host's /usr stays read-only, the
    # node's read-only files stay so (no CAP_DAC_OVERRIDE); `chroot /host` still works
    args += ["--cap-drop", "ALL", "--cap-add", "CAP_SYS_CHROOT"]
    if unshare_net:  # a pod's Service addresses include low ports (containerd's default capabilities have it too)
        args += ["--cap-add", "CAP_NET_BIND_SERVICE"]
    args += ["--ro-bind", "/usr", "/usr", *_host_links(), "--ro-bind", str(shims), "/usr/local/sbin",
             *(_composed_proc(root) if node_proc else ["--proc", "/proc"]), "--dev", "/dev"]
    for d in NODE_DIRS:
        args += ["--bind", str(root.path(d)), d]
    if os.path.isdir("/etc/alternatives"):  # Debian's /usr/bin/awk, editor, … point through it
        args += ["--ro-bind", "/etc/alternatives", "/etc/alternatives"]
    args += _proc_overlays(root, composed=node_proc)
    args += ["--bind", str(control), CONTROL_DIR]
    # the node's root at /host, complete enough to chroot into
    args += ["--bind", str(root.root), "/host", "--ro-bind", "/usr", "/host/usr",
             "--ro-bind", str(shims), "/host/usr/local/sbin", "--dev", "/host/dev",
             "--bind", str(control), "/host" + CONTROL_DIR]
    for inside, node_dir in NFD_HOST_DIRS.items():
        args += ["--ro-bind", str(root.path(node_dir)), inside]
    args += ["--ro-bind", "/usr/lib", "/host-usr/lib", "--ro-bind", "/usr/lib", "/host-lib"]
    if root.cpu_mount is not None:  # CPU hotplug through the cpu filesystem: synchronous, as in sysfs
        cpu = "/sys/devices/system/cpu"
        args += ["--bind", str(root.cpu_mount), cpu, "--bind", str(root.cpu_mount), "/host" + cpu,
                 "--ro-bind", str(root.cpu_mount), "/host-sys/devices/system/cpu"]
    if hook:  # nfd-worker mounts its hook and feature directories read-only
        args += ["--ro-bind", str(root.path(nfd)), nfd]
    if source_d is not None:
        args += ["--ro-bind", str(source_d), NFD_SOURCE_D]
    for inside, host_path in (binds or {}).items():
        args += ["--ro-bind", str(host_path), inside]
    for inside, host_path in (rw_binds or {}).items():
        args += ["--bind", str(host_path), inside]
    for k, v in env.items():
        args += ["--setenv", k, v]
    return [*args, "--chdir", cwd, "--"]


def run(root: GuestRoot, argv: Sequence[str], *, stdin: str = "", timeout: float = 60.0,
        max_output: int = DEFAULT_MAX_OUTPUT, env: Mapping[str, str] | None = None, cwd: str = "/",
        kubelet: KubeletControl | None = None, on_kubelet_restart: Callable[[bool], None] | None = None,
        stdout: Sink | None = None, stderr: Sink | None = None, merge_stderr: bool = False,
        hook: bool = False, source_d: Path | None = None, binds: Mapping[str, Path] | None = None,
        node_proc: bool = False, cancel: threading.Event | None = None,
        terminate: threading.Event | None = None, rw_binds: Mapping[str, Path] | None = None,
        unshare_net: bool = False) -> Result:
    """Run `argv` on the node `root` (exec form: no shell unless argv is one).

    `stdout`/`stderr` receive the output as it comes (the pod log, an SSH channel); `merge_stderr` sends
    stderr to stdout, as a container's log has both. `kubelet` answers the systemctl/journalctl shims;
    `on_kubelet_restart(blocking)` is called before a `systemctl restart kubelet` is carried out. Setting
    `cancel` kills the command as the timeout does (its container's pod was removed, the lab stops); setting
    `terminate` sends SIGTERM, once, to every process of the command (a graceful delete of its pod).
    """
    root.ready()
    hostname = root.hostname
    full_env = {"PATH": PATH, "HOME": "/root", "HOSTNAME": hostname, "LANG": "C.UTF-8", **(env or {})}
    run_dir = Path(tempfile.mkdtemp(prefix=".sandbox-", dir=root.root.parent))
    try:
        (run_dir / "bin").mkdir()
        for name, text in SHIMS.items():
            shim = run_dir / "bin" / name
            shim.write_text(text)
            shim.chmod(0o755)
        for sub in ("ctl/req", "ctl/resp"):
            (run_dir / sub).mkdir(parents=True)
        cmd = bwrap_args(root, run_dir, hostname=hostname, env=full_env, cwd=cwd, hook=hook,
                         source_d=source_d, binds=binds, node_proc=node_proc, rw_binds=rw_binds,
                         unshare_net=unshare_net) + list(argv)
        return _Runner(root, run_dir / "ctl", kubelet, on_kubelet_restart, max_output).run(
            cmd, stdin, timeout, stdout, stderr, merge_stderr, cancel, terminate)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def run_hook(root: GuestRoot, hook_guest_path: str, *, timeout: float, max_output: int,
             env: Mapping[str, str] | None = None, source_d: Path | None = None) -> tuple[int | None, str, str, bool]:
    """Run the executable at `hook_guest_path` (a path in the node, e.g.
    /etc/kubernetes/node-feature-discovery/source.d/my-script) as nfd-worker runs a hook: the node's tree at
    /host-proc, /host-sys, /host-etc, /host-boot, /host-usr/lib, /host-lib (as NFD's worker DaemonSet mounts
    them), source.d and features.d at their own paths (read-only), with `env` (plus PATH) and no stdin;
    exec form, as Go's exec.Command (NFD source/local), so the hook needs its executable bit or a shebang.

    Returns (exit code, stdout, stderr, timed_out): exit code None when it was killed on `timeout` (seconds);
    stdout/stderr hold at most `max_output` bytes each (decoded as UTF-8, errors replaced).
    """
    res = run(root, [hook_guest_path], timeout=timeout, max_output=max_output, env=env, hook=True, source_d=source_d)
    return res.code, res.stdout, res.stderr, res.timed_out


__all__ = ["NFD_FEATURES_D", "NFD_SOURCE_D", "Result", "SandboxError", "bwrap_args", "run", "run_hook"]


class _Runner:
    """One sandboxed process: pumps its output, polls the CPU files, serves the shims, enforces the limits."""

    def __init__(self, root: GuestRoot, control: Path, kubelet: KubeletControl | None,
                 on_restart: Callable[[bool], None] | None, max_output: int) -> None:
        self.root = root
        self.control = control
        self.kubelet = kubelet
        self.on_restart = on_restart
        self.max_output = max_output
        self.kept = {"out": bytearray(), "err": bytearray()}
        self.decoders = {k: codecs.getincrementaldecoder("utf-8")("replace") for k in self.kept}
        self.sinks: dict[str, Sink | None] = {}
        self.truncated = False

    def run(self, cmd: list[str], stdin: str, timeout: float, out: Sink | None, err: Sink | None,
            merge: bool, cancel: threading.Event | None = None, terminate: threading.Event | None = None) -> Result:
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT if merge else subprocess.PIPE, env={})
        except OSError as e:
            raise SandboxError(f"bwrap could not start: {e}") from e
        self.sinks = {"out": out, "err": err}
        feeder = threading.Thread(target=_feed, args=(proc, stdin.encode()), daemon=True)
        feeder.start()
        sel = selectors.DefaultSelector()
        assert proc.stdout is not None
        sel.register(proc.stdout, selectors.EVENT_READ, "out")
        if proc.stderr is not None:
            sel.register(proc.stderr, selectors.EVENT_READ, "err")
        deadline = time.monotonic() + timeout
        timed_out = termed = False
        try:
            while sel.get_map():
                if terminate is not None and terminate.is_set() and not termed:
                    termed = True
                    _signal_command(proc.pid, signal.SIGTERM)
                if time.monotonic() > deadline or (cancel is not None and cancel.is_set()):
                    timed_out = True
                    _kill(proc)
                    break
                self._pump(sel, POLL)
                self._tick(sel)
            code = proc.wait(timeout=max(0.0, deadline - time.monotonic()) + 5)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill(proc)
            code = proc.wait()
        finally:
            sel.close()
            for f in (proc.stdout, proc.stderr):
                if f is not None:
                    f.close()
        self._tick(None)
        for key in self.kept:
            self._deliver(key, b"", final=True)
        return Result(None if timed_out else code, self._text("out"), "" if merge else self._text("err"),
                      timed_out=timed_out, truncated=self.truncated)

    def _pump(self, sel: selectors.BaseSelector, wait: float) -> None:
        for key, _ in sel.select(wait):
            data = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
            if not data:
                sel.unregister(key.fileobj)
                continue
            self._deliver(key.data, data)

    def _deliver(self, key: str, data: bytes, *, final: bool = False) -> None:
        room = self.max_output - len(self.kept[key])
        if len(data) > room:
            self.truncated = True
            data = data[:max(room, 0)]
        self.kept[key] += data
        text = self.decoders[key].decode(data, final=final)
        sink = self.sinks.get(key)
        if text and sink is not None:
            sink(text)

    def _text(self, key: str) -> str:
        return bytes(self.kept[key]).decode(errors="replace")

    def _tick(self, sel: selectors.BaseSelector | None) -> None:
        self.root.apply_cpu_writes()
        req_dir = self.control / "req"
        for name in sorted(n for n in os.listdir(req_dir) if not n.startswith(".")):
            path = req_dir / name
            argv = path.read_bytes().split(b"\0")[:-1]
            path.unlink()
            if sel is not None:
                self._pump(sel, 0)  # what the command printed before it asked reaches the sinks first
            code, out, err = serve([a.decode(errors="replace") for a in argv], self.kubelet, self.on_restart)
            resp = self.control / "resp"
            (resp / f"{name}.out").write_text(out)
            (resp / f"{name}.err").write_text(err)
            (resp / f".{name}.rc").write_text(f"{code}\n")
            os.replace(resp / f".{name}.rc", resp / f"{name}.rc")


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the run: every process under bwrap, then bwrap. The PID namespace's init (bwrap's child, pid 1
    there) does not die with bwrap (--die-with-parent's PDEATHSIG does not reach a namespace's init): seen as
    orphaned `bwrap` processes, NSpid 1, after a lab's pods were cancelled."""
    _signal_command(proc.pid, signal.SIGKILL, bwraps=True)
    proc.kill()


def _signal_command(bwrap_pid: int, sig: int, *, bwraps: bool = False) -> None:
    """Send `sig` to the command's processes: bwrap's descendants but bwrap itself and its init, which would not
    pass it on (the container runtime signals the container's process the same way); with `bwraps`, to bwrap's
    init too."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        parents[int(entry)], names[int(entry)] = int(rest[1]), name
    tree, grew = {bwrap_pid}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    for pid in tree:
        if pid != bwrap_pid and (bwraps or names.get(pid) != "bwrap"):
            with contextlib.suppress(OSError):
                os.kill(pid, sig)


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    try:
        if data:
            proc.stdin.write(data)
        proc.stdin.close()
    except OSError:  # the command exited without reading its input
        pass
