"""The host tools the guest shell runs: coreutils-style commands, lscpu, systemctl, journalctl.

Each `cmd_<name>(args, io) -> status` is found by name from `Shell.exec`; output
and messages read as the real tools' do. Shell builtins that act on the
interpreter itself (`set`, `exit`, `sh -c`, `chroot`, `nsenter`) live in `guestshell`.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from console.lab.guestfs import FsError, GuestFs, cpu_list

if TYPE_CHECKING:
    from console.lab.guestshell import IO


class GuestCommands(GuestFs):
    """The host tools, mixed into `Shell`; `line` is the script line being run (for messages)."""

    line: int

    def cmd_echo(self, args: list[str], io: IO) -> int:
        newline = True
        if args and args[0] == "-n":
            newline, args = False, args[1:]
        io.out(" ".join(args) + ("\n" if newline else ""))
        return 0

    def cmd_printf(self, args: list[str], io: IO) -> int:
        if not args:
            io.err("printf: usage: printf format [arg ...]\n")
            return 2
        fmt = args[0].replace("\\n", "\n").replace("\\t", "\t")
        rest = args[1:]
        text = re.sub(r"%[sd]", lambda m: rest.pop(0) if rest else "", fmt)
        io.out(text.replace("%%", "%"))
        return 0

    def cmd_sleep(self, args: list[str], io: IO) -> int:
        try:
            seconds = float(args[0].rstrip("s"))
        except (IndexError, ValueError):
            io.err("sleep: invalid time interval\n")
            return 1
        time.sleep(max(0.0, min(seconds, self.host.max_sleep)))
        return 0

    def cmd_hostname(self, args: list[str], io: IO) -> int:
        io.out(self.host.hostname + "\n")
        return 0

    def cmd_uname(self, args: list[str], io: IO) -> int:
        k = self.host.kernel_version
        if "-a" in args:
            io.out(f"Linux {self.host.hostname} {k} #185-Ubuntu SMP x86_64 x86_64 x86_64 GNU/Linux\n")
        else:
            io.out(k + "\n" if "-r" in args else "Linux\n")
        return 0

    def cmd_nproc(self, args: list[str], io: IO) -> int:
        io.out(f"{len(self.host.guest.online_cpus)}\n")
        return 0

    def cmd_seq(self, args: list[str], io: IO) -> int:
        try:
            nums = [int(a) for a in args]
        except ValueError:
            io.err(f"seq: invalid floating point argument: '{args[0] if args else ''}'\n")
            return 1
        if not 1 <= len(nums) <= 3:
            io.err("seq: missing operand\n")
            return 1
        first, step, last = (1, 1, nums[0]) if len(nums) == 1 else (
            (nums[0], 1, nums[1]) if len(nums) == 2 else (nums[0], nums[1], nums[2]))
        if step == 0:
            io.err("seq: invalid Zero increment value: '0'\n")
            return 1
        values = range(first, last + (1 if step > 0 else -1), step)
        if len(values) > 1_000_000:  # a lab guard: a runaway loop must not eat the host's memory
            io.err("seq: write error: No space left on device\n")
            return 1
        io.out("".join(f"{v}\n" for v in values))
        return 0

    def cmd_cat(self, args: list[str], io: IO) -> int:
        status = 0
        paths = [a for a in args if a != "-"] or None
        if paths is None:
            io.out(io.stdin)
            return 0
        for path in paths:
            try:
                io.out(self.read_file(path))
            except FsError as exc:
                io.err(f"cat: {path}: {exc}\n")
                status = 1
        return status

    def cmd_ls(self, args: list[str], io: IO) -> int:
        status = 0
        for path in [a for a in args if not a.startswith("-")] or ["/"]:
            p = self.norm(path)
            if self.is_dir(p):
                depth = p.rstrip("/").count("/") + 1
                prefix = p.rstrip("/") + "/"
                kids = sorted({q[len(prefix):].split("/")[0] for q in self.all_paths()
                               if q.startswith(prefix) and q.count("/") >= depth})
                io.out("".join(k + "\n" for k in kids))
            elif self.exists(p):
                io.out(path + "\n")
            else:
                io.err(f"ls: cannot access '{path}': No such file or directory\n")
                status = 2
        return status

    def cmd_rm(self, args: list[str], io: IO) -> int:
        force = any(a.startswith("-") and "f" in a for a in args)
        status = 0
        for path in [a for a in args if not a.startswith("-")]:
            p = self.norm(path)
            if p.startswith(("/sys/", "/proc/")) and self.exists(p):
                io.err(f"rm: cannot remove '{path}': Operation not permitted\n")
                status = 1
            elif p in self.host.files:
                del self.host.files[p]
            elif not force:
                io.err(f"rm: cannot remove '{path}': No such file or directory\n")
                status = 1
        if not args:
            io.err("rm: missing operand\n")
            return 1
        return status

    def cmd_touch(self, args: list[str], io: IO) -> int:
        for path in args:
            p = self.norm(path)
            if not self.exists(p):
                self.host.files[p] = ""
        return 0

    def cmd_test(self, args: list[str], io: IO) -> int:
        if args and args[-1] == "]":
            args = args[:-1]
        negate = bool(args) and args[0] == "!"
        if negate:
            args = args[1:]
        try:
            ok = self._test_expr(args)
        except ValueError as exc:
            io.err(f"sh: {self.line}: test: {exc}\n")
            return 2
        return int(ok == negate)

    def _test_expr(self, a: list[str]) -> bool:
        if not a:
            return False
        if len(a) == 1:
            return a[0] != ""
        if len(a) == 2:
            op, x = a
            p = self.norm(x)
            checks = {"-n": lambda: x != "", "-z": lambda: x == "", "-e": lambda: self.exists(p),
                      "-f": lambda: self.exists(p) and not self.is_dir(p), "-d": lambda: self.is_dir(p),
                      "-s": lambda: self.exists(p) and not self.is_dir(p) and self.read_file(x) != "",
                      "-r": lambda: self.exists(p), "-w": lambda: self.exists(p), "-x": lambda: self.is_dir(p)}
            if op not in checks:
                raise ValueError(f"{op}: unexpected operator")
            return bool(checks[op]())
        if len(a) == 3:
            x, op, y = a
            if op in ("=", "=="):
                return x == y
            if op == "!=":
                return x != y
            ints = {"-eq": int.__eq__, "-ne": int.__ne__, "-gt": int.__gt__, "-ge": int.__ge__,
                    "-lt": int.__lt__, "-le": int.__le__}
            if op in ints:
                try:
                    return bool(ints[op](int(x), int(y)))
                except ValueError:
                    raise ValueError(f"Illegal number: {x if not x.lstrip('-').isdigit() else y}") from None
        raise ValueError(f"{a[1]}: unexpected operator")

    def cmd_grep(self, args: list[str], io: IO) -> int:
        flags, rest = set(), []
        for a in args:
            if a.startswith("-") and len(a) > 1 and not rest:
                flags.update(a[1:])
            else:
                rest.append(a)
        if not rest:
            io.err("Usage: grep [OPTION]... PATTERNS [FILE]...\n")
            return 2
        pattern, files = rest[0], rest[1:]
        try:
            rx = re.compile(re.escape(pattern) if "F" in flags else pattern, re.I if "i" in flags else 0)
        except re.error:
            io.err("grep: Invalid regular expression\n")
            return 2
        text = io.stdin
        if files:
            try:
                text = "".join(self.read_file(f) for f in files)
            except FsError as exc:
                io.err(f"grep: {files[0]}: {exc}\n")
                return 2
        hits = [ln for ln in text.splitlines() if bool(rx.search(ln)) != ("v" in flags)]
        if "c" in flags:
            io.out(f"{len(hits)}\n")
        elif "q" not in flags:
            io.out("".join(h + "\n" for h in hits))
        return 0 if hits else 1

    def _lines_arg(self, args: list[str]) -> tuple[int, list[str]]:
        n, files, it = 10, [], iter(args)
        for a in it:
            if a == "-n":
                n = int(next(it, "10"))
            elif re.fullmatch(r"-n?\d+", a):
                n = int(a.lstrip("-n"))
            else:
                files.append(a)
        return n, files

    def cmd_head(self, args: list[str], io: IO) -> int:
        n, files = self._lines_arg(args)
        text = "".join(self.read_file(f) for f in files) if files else io.stdin
        io.out("".join(ln + "\n" for ln in text.splitlines()[:n]))
        return 0

    def cmd_tail(self, args: list[str], io: IO) -> int:
        n, files = self._lines_arg(args)
        text = "".join(self.read_file(f) for f in files) if files else io.stdin
        io.out("".join(ln + "\n" for ln in text.splitlines()[-n:] if n))
        return 0

    def cmd_wc(self, args: list[str], io: IO) -> int:
        text = io.stdin
        if "-l" in args:
            io.out(f"{text.count(chr(10))}\n")
        elif "-w" in args:
            io.out(f"{len(text.split())}\n")
        else:
            io.out(f"{text.count(chr(10))} {len(text.split())} {len(text)}\n")
        return 0

    def cmd_lscpu(self, args: list[str], io: IO) -> int:
        g = self.host.guest
        present = set(range(g.present_vcpus))
        online = set(g.online_cpus)
        rows = [("Architecture:", "x86_64"), ("CPU op-mode(s):", "32-bit, 64-bit"),
                ("Byte Order:", "Little Endian"), ("Address sizes:", "40 bits physical, 48 bits virtual"),
                ("CPU(s):", str(len(present))), ("On-line CPU(s) list:", cpu_list(online))]
        if present - online:
            rows.append(("Off-line CPU(s) list:", cpu_list(present - online)))
        rows += [("Thread(s) per core:", "1"), ("Core(s) per socket:", "1"), ("Socket(s):", str(len(online))),
                 ("NUMA node(s):", "1"), ("Vendor ID:", "GenuineIntel"), ("CPU family:", "6"),
                 ("Model:", "85"), ("Model name:", "Intel Xeon Processor (Skylake, IBRS)"),
                 ("Hypervisor vendor:", "KVM"), ("Virtualization type:", "full"),
                 ("NUMA node0 CPU(s):", cpu_list(online))]
        io.out("".join(f"{k:<33}{v}\n" for k, v in rows))
        return 0

    def cmd_systemctl(self, args: list[str], io: IO) -> int:
        no_block = "--no-block" in args
        words = [a for a in args if not a.startswith("-")]
        if not words:
            io.err("systemctl: missing verb\n")
            return 1
        verb, units = words[0], [u.removesuffix(".service") for u in words[1:]]
        if verb == "daemon-reload":
            return 0
        if not units:
            io.err("Too few arguments.\n")
            return 1
        kubelet = self.host.kubelet
        status = 0
        for unit in units:
            if unit != "kubelet" or kubelet is None:
                if verb in ("is-active", "status"):
                    io.out("inactive\n" if verb == "is-active" else "")
                    if verb == "status":
                        io.err(f"Unit {unit}.service could not be found.\n")
                    status = 4 if verb == "status" else 3
                else:
                    io.err(f"Failed to {verb} {unit}.service: Unit {unit}.service not found.\n")
                    status = 5
                continue
            if verb in ("restart", "try-restart", "reload-or-restart"):
                kubelet.restart(wait=not no_block)
                if self.host.on_kubelet_restart:
                    self.host.on_kubelet_restart(not no_block)
            elif verb == "stop":
                kubelet.stop_service()
            elif verb == "start":
                kubelet.start_service()
            elif verb == "is-active":
                io.out(kubelet.service + "\n")
                status = 0 if kubelet.service == "active" else 3
            elif verb == "is-enabled":
                io.out("enabled\n")
            elif verb == "status":
                state = {"active": "active (running)", "activating": "activating (auto-restart)",
                         "failed": "failed (Result: exit-code)"}.get(kubelet.service, "inactive (dead)")
                io.out(f"● kubelet.service - Kubernetes Kubelet Server\n     Active: {state}\n")
                io.out("".join(ln + "\n" for ln in kubelet.journal[-10:]))
                status = 0 if kubelet.service == "active" else 3
            else:
                io.err(f"Unknown command verb {verb}.\n")
                return 1
        return status

    def cmd_journalctl(self, args: list[str], io: IO) -> int:
        n = None
        if "-n" in args:
            try:
                n = int(args[args.index("-n") + 1])
            except (IndexError, ValueError):
                n = 10
        lines = list(self.host.kubelet.journal) if self.host.kubelet else []
        io.out("".join(ln + "\n" for ln in (lines[-n:] if n else lines)) or "-- No entries --\n")
        return 0
