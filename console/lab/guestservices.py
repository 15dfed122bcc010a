"""The host services a lab node simulates, and the shims that reach them from inside the sandbox.

Everything a command runs on a lab node is the real program (`sandbox`), except what talks to a service
the lab simulates in its own process: `systemctl` and `journalctl` (systemd and the kubelet unit are the
lab's `Kubelet`), `nsenter` (the debug-pod recipe `nsenter -t 1 -m -u -i -n -p -- CMD` enters the host's
namespaces; the sandbox already is the host, so the shim runs CMD), `nproc` (the guest's online CPUs:
the lab host cannot give a process the guest's CPU affinity) and `uname` (the guest's kernel, from
/proc/sys/kernel: a namespace cannot change what uname(2) reports but the hostname).
The systemctl/journalctl shims are POSIX sh: each writes its argv (NUL-separated) as a request
file into /run/console-lab/req/ and waits for the lab's reply (`<id>.out`, `<id>.err`, then `<id>.rc`
last); the runner serves requests while the command runs.

Replies read as systemd's own (systemctl(1): exit 3 for an inactive unit on is-active/status, 4 "no such
unit" for status, 5 "Unit X.service not found." for other verbs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

CONTROL_DIR = "/run/console-lab"


class KubeletControl(Protocol):
    service: str  # active | activating | failed | inactive
    journal: list[str]

    def restart(self, *, wait: bool = False) -> None: ...
    def stop_service(self) -> None: ...
    def start_service(self) -> None: ...


_ASK = f"""d={CONTROL_DIR}; id=$$.$(date +%s%N)
printf '%s\\0' "$(basename "$0")" "$@" > "$d/req/.$id" && mv "$d/req/.$id" "$d/req/$id" || exit 1
while [ ! -e "$d/resp/$id.rc" ]; do sleep 0.02; done
cat "$d/resp/$id.out"; cat "$d/resp/$id.err" >&2; rc=$(cat "$d/resp/$id.rc"); rm -f "$d/resp/$id".*
exit "$rc"
"""
SHIMS = {
    "systemctl": "#!/bin/sh\n# systemd is simulated by the console lab (console/lab/guestservices.py)\n" + _ASK,
    "journalctl": "#!/bin/sh\n# the journal is simulated by the console lab (console/lab/guestservices.py)\n" + _ASK,
    "nproc": """#!/bin/sh
# console lab: a process on the node may use the guest's online CPUs, which the lab host (fewer CPUs) cannot
# give it as an affinity mask; count them as sysconf does, from /sys/devices/system/cpu/online (coreutils nproc)
all=; ignore=0
while [ $# -gt 0 ]; do
  case "$1" in
    --all) all=1 ;;
    --ignore=*) ignore=${1#--ignore=} ;;
    --ignore) ignore=$2; shift ;;
    *) exec /usr/bin/nproc "$@" ;;
  esac
  shift
done
if [ -n "$all" ]; then n=$(getconf _NPROCESSORS_CONF); else n=$(getconf _NPROCESSORS_ONLN); fi
n=$((n - ignore)); [ "$n" -ge 1 ] || n=1
echo "$n"
""",
    "uname": """#!/bin/sh
# console lab: the node's kernel is the simulated guest's (/proc/sys/kernel), not the lab host's uname(2)
k=/proc/sys/kernel flags=
for a in "$@"; do
  case "$a" in
    --all) flags=${flags}a ;; --kernel-name) flags=${flags}s ;; --nodename) flags=${flags}n ;;
    --kernel-release) flags=${flags}r ;; --kernel-version) flags=${flags}v ;; --machine) flags=${flags}m ;;
    --processor) flags=${flags}p ;; --hardware-platform) flags=${flags}i ;; --operating-system) flags=${flags}o ;;
    -[asnrvmpio]*) case "${a#-}" in *[!asnrvmpio]*) exec /usr/bin/uname "$@" ;; esac; flags=$flags${a#-} ;;
    *) exec /usr/bin/uname "$@" ;;
  esac
done
[ -n "$flags" ] || flags=s
case $flags in *a*) flags=snrvmpio ;; esac
out=
for f in s n r v m p i o; do
  case $flags in *$f*) ;; *) continue ;; esac
  case $f in
    s) x=$(cat $k/ostype) ;; n) x=$(cat $k/hostname) ;; r) x=$(cat $k/osrelease) ;; v) x=$(cat $k/version) ;;
    m|p|i) x=$(/usr/bin/uname -m) ;; o) x=GNU/Linux ;;
  esac
  out="${out:+$out }$x"
done
echo "$out"
""",
    "nsenter": """#!/bin/sh
# console lab: this sandbox already is the node's host namespace; run the program (util-linux nsenter(1))
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; break ;;
    -t|--target|-S|--setuid|-G|--setgid|-r|-w) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || set -- "${SHELL:-/bin/sh}"
command -v "$1" >/dev/null 2>&1 || { echo "nsenter: failed to execute $1: No such file or directory" >&2; exit 127; }
exec "$@"
""",
}


def serve(argv: list[str], kubelet: KubeletControl | None,
          on_restart: Callable[[bool], None] | None = None) -> tuple[int, str, str]:
    """One shim request: (exit code, stdout, stderr)."""
    if not argv:
        return 1, "", "empty request\n"
    if argv[0] == "journalctl":
        return _journalctl(argv[1:], kubelet)
    return _systemctl(argv[1:], kubelet, on_restart)


def _systemctl(args: list[str], kubelet: KubeletControl | None,
               on_restart: Callable[[bool], None] | None) -> tuple[int, str, str]:
    no_block = "--no-block" in args
    words = [a for a in args if not a.startswith("-")]
    if not words:
        return 1, "", "systemctl: missing verb\n"
    verb, units = words[0], [u.removesuffix(".service") for u in words[1:]]
    if verb == "daemon-reload":
        return 0, "", ""
    if not units:
        return 1, "", "Too few arguments.\n"
    out: list[str] = []
    err: list[str] = []
    status = 0
    for unit in units:
        if unit != "kubelet" or kubelet is None:
            if verb == "is-active":
                out.append("inactive\n")
                status = 3
            elif verb == "status":
                err.append(f"Unit {unit}.service could not be found.\n")
                status = 4
            else:
                err.append(f"Failed to {verb} {unit}.service: Unit {unit}.service not found.\n")
                status = 5
            continue
        if verb in ("restart", "try-restart", "reload-or-restart"):
            if on_restart is not None:
                on_restart(not no_block)
            kubelet.restart(wait=not no_block)
        elif verb == "stop":
            kubelet.stop_service()
        elif verb == "start":
            kubelet.start_service()
        elif verb == "is-active":
            out.append(kubelet.service + "\n")
            status = 0 if kubelet.service == "active" else 3
        elif verb == "is-enabled":
            out.append("enabled\n")
        elif verb == "status":
            state = {"active": "active (running)", "activating": "activating (auto-restart)",
                     "failed": "failed (Result: exit-code)"}.get(kubelet.service, "inactive (dead)")
            out.append(f"● kubelet.service - Kubernetes Kubelet Server\n     Active: {state}\n")
            out.extend(ln + "\n" for ln in kubelet.journal[-10:])
            status = 0 if kubelet.service == "active" else 3
        else:
            return 1, "", f"Unknown command verb {verb}.\n"
    return status, "".join(out), "".join(err)


def _journalctl(args: list[str], kubelet: KubeletControl | None) -> tuple[int, str, str]:
    n = None
    for i, a in enumerate(args):
        value = args[i + 1] if a in ("-n", "--lines") and i + 1 < len(args) else (
            a.split("=", 1)[1] if a.startswith("--lines=") else None)
        if value is not None:
            n = int(value) if value.isdigit() else 10
    lines = list(kubelet.journal) if kubelet is not None else []
    shown = lines if n is None else lines[max(len(lines) - n, 0):]
    return 0, "".join(ln + "\n" for ln in shown) or "-- No entries --\n", ""
