"""The node-debug shell: commands, quoting, redirections, loops, exit codes, garbage input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.lab.guestshell import GuestHost, Shell, cpu_list, parse


class Guest:
    """Minimal Guest: 12 present vCPUs, 0-7 online (hot-added ones arrive offline)."""

    uuid = "5d2e8c1a-0000-4000-8000-000000000001"
    running = True
    boot_id = "b00t"

    def __init__(self, present=12, online=8, mem=16396200):
        self.present_vcpus = present
        self.online_cpus = frozenset(range(online))
        self.mem_total_kib = mem

    def set_cpu_online(self, cpu, online):
        if not 0 <= cpu < self.present_vcpus:
            raise ValueError(cpu)
        self.online_cpus = self.online_cpus | {cpu} if online else self.online_cpus - {cpu}

    def subscribe(self, callback):
        return lambda: None


class Kubelet:
    def __init__(self):
        self.service = "active"
        self.journal = ["Nov 29 kube-worker02 Started kubelet: The Kubernetes Node Agent."]
        self.calls = []

    def restart(self, *, wait=False):
        self.calls.append(("restart", wait))

    def stop_service(self):
        self.calls.append(("stop",))
        self.service = "inactive"

    def start_service(self):
        self.calls.append(("start",))
        self.service = "active"


@pytest.fixture
def host():
    return GuestHost(guest=Guest(), hostname="kube-worker02", kubelet=Kubelet(), max_sleep=0.01,
                     files={"/var/lib/kubelet/cpu_manager_state": '{"defaultCpuSet": "0-7"}'})


def sh(host, script):
    out = []
    code = Shell(host, out.append).run_script(script)
    return code, "".join(out)


def test_sysfs_cpu_files(host):
    assert sh(host, "cat /sys/devices/system/cpu/online") == (0, "0-7\n")
    assert sh(host, "cat /sys/devices/system/cpu/offline") == (0, "8-11\n")
    assert sh(host, "cat /sys/devices/system/cpu/cpu9/online") == (0, "0\n")
    assert sh(host, "cat /sys/devices/system/cpu/cpu0/online") == (
        1, "cat: /sys/devices/system/cpu/cpu0/online: No such file or directory\n")


def test_online_loop_with_seq(host):
    code, out = sh(host, "for i in $(seq 8 11); do echo 1 > /sys/devices/system/cpu/cpu$i/online; done; nproc")
    assert (code, out) == (0, "12\n")
    assert host.guest.online_cpus == frozenset(range(12))
    assert sh(host, "cat /sys/devices/system/cpu/offline") == (0, "\n")


def test_for_over_a_list_and_offline(host):
    assert sh(host, 'for c in 8 9; do echo 1 > "/sys/devices/system/cpu/cpu$c/online"; done')[0] == 0
    assert sh(host, "echo 0 > /sys/devices/system/cpu/cpu9/online; cat /sys/devices/system/cpu/online") == (
        0, "0-8\n")


def test_sysfs_write_errors(host):
    assert sh(host, "echo 1 > /sys/devices/system/cpu/cpu12/online") == (
        2, "sh: 1: cannot create /sys/devices/system/cpu/cpu12/online: Directory nonexistent\n")
    assert sh(host, "echo 1 > /sys/devices/system/cpu/cpu0/online") == (
        2, "sh: 1: cannot create /sys/devices/system/cpu/cpu0/online: Permission denied\n")
    assert sh(host, "echo 2 > /sys/devices/system/cpu/cpu8/online") == (1, "sh: 1: echo: echo: I/O error\n")


def test_lscpu_lines_as_in_the_field_report(host):
    code, out = sh(host, "lscpu")
    assert code == 0
    assert "CPU(s):                          12\n" in out
    assert "On-line CPU(s) list:             0-7\n" in out
    assert "Off-line CPU(s) list:            8-11\n" in out
    host.guest.online_cpus = frozenset(range(12))
    assert "Off-line" not in sh(host, "lscpu")[1]


def test_meminfo(host):
    code, out = sh(host, "cat /proc/meminfo | grep MemTotal")
    assert (code, out) == (0, "MemTotal:       16396200 kB\n")
    assert sh(host, "grep -c kB /proc/meminfo")[1].strip().isdigit()


def test_systemctl(host):
    assert sh(host, "systemctl restart kubelet") == (0, "")
    assert sh(host, "systemctl restart --no-block kubelet.service") == (0, "")
    assert host.kubelet.calls == [("restart", True), ("restart", False)]
    assert sh(host, "systemctl is-active kubelet") == (0, "active\n")
    host.kubelet.service = "activating"
    assert sh(host, "systemctl is-active kubelet") == (3, "activating\n")
    assert sh(host, "systemctl restart kubeletx") == (5, "Failed to restart kubeletx.service: Unit kubeletx.service "
                                                         "not found.\n")
    assert sh(host, "systemctl stop kubelet && systemctl is-active kubelet || echo down") == (0, "inactive\ndown\n")


def test_blocking_restart_hook(host):
    seen = []
    host.on_kubelet_restart = seen.append
    sh(host, "systemctl restart kubelet; systemctl restart --no-block kubelet")
    assert seen == [True, False]


def test_rm_and_test_e(host):
    state = "/var/lib/kubelet/cpu_manager_state"
    assert sh(host, f"test -e {state} && echo there") == (0, "there\n")
    assert sh(host, f"rm -f {state} /var/lib/kubelet/memory_manager_state; [ -e {state} ] || echo gone") == (
        0, "gone\n")
    assert state not in host.files
    assert sh(host, f"rm {state}") == (1, f"rm: cannot remove '{state}': No such file or directory\n")


def test_nsenter_chroot_and_sh_c(host):
    assert sh(host, "nsenter -t 1 -m -u -i -n -p -- hostname") == (0, "kube-worker02\n")
    assert sh(host, "chroot /host sh -c 'cat /etc/os-release | head -n 1'") == (0, 'NAME="Ubuntu"\n')
    assert sh(host, "cat /host/etc/hostname") == (0, "kube-worker02\n")
    assert sh(host, "chroot /nope true") == (
        125, "chroot: cannot change root directory to '/nope': No such file or directory\n")
    assert sh(host, "nsenter -t 1 -m -- frob") == (127, "nsenter: failed to execute frob: No such file or directory\n")
    assert sh(host, "sh -c 'echo $0 $1' x y") == (0, "x y\n")


def test_run_argv_exec_form(host):
    out = []
    argv = ["nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "--", "sh", "-c", "echo a; exit 4"]
    assert Shell(host, out.append).run_argv(argv) == 4
    assert out == ["a\n"]


def test_lists_and_exit_codes(host):
    assert sh(host, "true && echo a || echo b") == (0, "a\n")
    assert sh(host, "false && echo a || echo b") == (0, "b\n")
    assert sh(host, "false; echo $?") == (0, "1\n")
    assert sh(host, "! false") == (0, "")
    assert sh(host, "exit 7; echo no") == (7, "")
    assert sh(host, "set -e; echo a; false; echo b") == (1, "a\n")
    assert sh(host, "set -e; false || true; echo ok") == (0, "ok\n")
    assert sh(host, "if test -e /etc/os-release; then echo yes; else echo no; fi") == (0, "yes\n")
    assert sh(host, "n=0; while [ $n -lt 3 ]; do echo $n; n=$((n + 1)); done") == (0, "0\n1\n2\n")
    assert sh(host, "echo $(( (7 + 1) / 2 * 3 % 5 ))") == (0, "2\n")


def test_unknown_command_and_line_numbers(host):
    assert sh(host, "frobnicate") == (127, "sh: 1: frobnicate: not found\n")
    assert sh(host, "echo a\n\nnope") == (127, "a\nsh: 3: nope: not found\n")


def test_quoting_and_variables(host):
    assert sh(host, """X='a  b'; echo "$X" $X '$X' "${X}!" """) == (0, "a  b a b $X a  b!\n")
    assert sh(host, 'echo "cpus: $(nproc)"') == (0, "cpus: 8\n")
    assert sh(host, "echo a\\ b") == (0, "a b\n")


def test_redirections(host):
    assert sh(host, "echo hi > /tmp/x; echo there >> /tmp/x; cat /tmp/x") == (0, "hi\nthere\n")
    assert sh(host, "cat /nope 2>/dev/null; echo $?") == (0, "1\n")
    assert sh(host, "cat /nope > /tmp/y 2>&1; cat /tmp/y") == (0, "cat: /nope: No such file or directory\n")
    assert sh(host, "wc -l < /tmp/x") == (0, "2\n")
    assert sh(host, "for i in 1 2; do echo $i; done > /tmp/z; cat /tmp/z") == (0, "1\n2\n")


def test_pipes_and_filters(host):
    assert sh(host, "seq 1 5 | tail -n 2") == (0, "4\n5\n")
    assert sh(host, "seq 3 | grep -v 2 | wc -l") == (0, "2\n")
    assert sh(host, "lscpu | grep -q Off-line && echo offline-cpus") == (0, "offline-cpus\n")


def test_journal_and_misc(host):
    journal = sh(host, "journalctl -u kubelet -n 1 --no-pager")[1]
    assert journal.endswith("Started kubelet: The Kubernetes Node Agent.\n")
    assert sh(host, "uname -r") == (0, "5.4.0-165-generic\n")
    assert sh(host, ": ; true") == (0, "")
    assert sh(host, "ls /sys/devices/system/cpu | grep -c '^cpu[0-9]'") == (0, "12\n")
    assert sh(host, "echo /sys/devices/system/cpu/cpu1?/online") == (
        0, "/sys/devices/system/cpu/cpu10/online /sys/devices/system/cpu/cpu11/online\n")


@pytest.mark.parametrize(("script", "message"), [
    ("echo 'oops", "sh: 1: Syntax error: Unterminated quoted string\n"),
    ("for i in 1 2; do echo $i", 'sh: 1: Syntax error: end of file unexpected (expecting "done")\n'),
    ("done", 'sh: 1: Syntax error: "done" unexpected\n'),
    ("echo a && ; echo b", 'sh: 1: Syntax error: ";" unexpected\n'),
    ("if true; then echo", 'sh: 1: Syntax error: end of file unexpected (expecting "fi")\n'),
])
def test_syntax_errors_exit_2(host, script, message):
    assert sh(host, script) == (2, message)


def test_cpu_list():
    assert cpu_list([0, 1, 2, 3, 5, 7, 8]) == "0-3,5,7-8"
    assert cpu_list([]) == ""


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_garbage_never_crashes(script):
    host = GuestHost(guest=Guest(), hostname="n", kubelet=Kubelet(), max_sleep=0.0)
    out = []
    code = Shell(host, out.append).run_script(script)
    assert isinstance(code, int) and 0 <= code <= 255
    assert isinstance("".join(out), str)


def test_parse_returns_tree():
    assert len(parse("a; b && c | d")) == 2
