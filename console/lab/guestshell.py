"""A small POSIX-sh interpreter over a simulated guest: what a node-debug pod runs.

Enough of dash for the commands an admin (or the console) sends through a
privileged pod: lists (`;`, `&&`, `||`, newlines), pipes, `for`/`if`/`while`,
quoting, `$VAR`, `$(...)`, `$(seq a b)`, redirections (`>`, `>>`, `2>`,
`2>&1`, `< file`), `set -e`, and commands acting on the guest's sysfs/procfs:
`echo 1 > /sys/devices/system/cpu/cpuN/online`, `lscpu`, `nproc`,
`cat /proc/meminfo`, `systemctl restart kubelet`, `rm -f
/var/lib/kubelet/cpu_manager_state`. Errors read as dash's do
(`sh: 1: foo: not found`, exit 127; syntax errors exit 2).

The parser is in `guestsyntax`, the host tools in `guestcmds`, the guest's
files and sysfs/procfs views in `guestfs`; `Shell` mixes them together.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# names that lived here before the split into guestsyntax/guestfs/guestcmds stay importable from here
from console.lab.guestcmds import GuestCommands
from console.lab.guestfs import CPU_DIR, OS_RELEASE, FsError, GuestHost, KubeletControl, cpu_list
from console.lab.guestsyntax import (
    RESERVED,
    AndOr,
    For,
    If,
    Parser,
    Pipeline,
    ShellError,
    Simple,
    Tok,
    While,
    parse,
    skip_quoted,
    tokenize,
)

__all__ = [
    "CPU_DIR",
    "IO",
    "OS_RELEASE",
    "RESERVED",
    "AndOr",
    "For",
    "GuestHost",
    "If",
    "KubeletControl",
    "Out",
    "Parser",
    "Pipeline",
    "Shell",
    "ShellError",
    "Simple",
    "Tok",
    "While",
    "cpu_list",
    "parse",
    "tokenize",
]

Out = Callable[[str], None]


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


# -- interpreter -------------------------------------------------------------
@dataclass
class IO:
    stdin: str
    out: Out
    err: Out


class Shell(GuestCommands):
    """Runs scripts against a `GuestHost`; output goes to `out` (stdout and stderr alike)."""

    def __init__(self, host: GuestHost, out: Out, *, chrooted: bool = False,
                 variables: dict[str, str] | None = None) -> None:
        self.host = host
        self.out = out
        self.chrooted = chrooted
        self.vars: dict[str, str] = dict(variables or {})
        self.vars.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        self.positional: list[str] = []
        self.status = 0
        self.errexit = False
        self.line = 1
        self._cond = 0

    # -- entry points ---------------------------------------------------------
    def run_script(self, src: str, stdin: str = "") -> int:
        io = IO(stdin, self.out, self.out)
        try:
            tree = parse(src)
        except ShellError as exc:
            io.err(f"sh: {exc}\n")
            return 2
        try:
            return self.run_list(tree, io)
        except _Exit as exc:
            return exc.code

    def run_argv(self, argv: list[str], stdin: str = "") -> int:
        """Run a container command (exec form: no shell parsing of argv)."""
        io = IO(stdin, self.out, self.out)
        try:
            return self.exec(argv, io)
        except _Exit as exc:
            return exc.code

    # -- tree walk ----------------------------------------------------------
    def run_list(self, items: list[AndOr], io: IO) -> int:
        status = 0
        for item in items:
            status = self.run_and_or(item, io)
        return status

    def run_and_or(self, item: AndOr, io: IO) -> int:
        status, ran_last = 0, False
        for k, (op, pipe) in enumerate(item.parts):
            if (op == "&&" and status != 0) or (op == "||" and status == 0):
                continue
            last = k == len(item.parts) - 1
            if not last:
                self._cond += 1
            try:
                status = self.run_pipeline(pipe, io)
            finally:
                if not last:
                    self._cond -= 1
            ran_last = last and not pipe.negate
        self.status = status
        if status and ran_last and self.errexit and not self._cond:
            raise _Exit(status)
        return status

    def run_pipeline(self, pipe: Pipeline, io: IO) -> int:
        stdin = io.stdin
        status = 0
        for k, cmd in enumerate(pipe.cmds):
            if k == len(pipe.cmds) - 1:
                status = self.run_command(cmd, IO(stdin, io.out, io.err))
            else:
                buf: list[str] = []
                self.run_command(cmd, IO(stdin, buf.append, io.err))
                stdin = "".join(buf)
        status = int(not status) if pipe.negate else status
        self.status = status
        return status

    def run_command(self, cmd: Any, io: IO) -> int:
        if isinstance(cmd, Simple):
            self.line = cmd.line
            return self._with_redirs(cmd.redirs, io, lambda sub: self._simple(cmd, sub))
        return self._with_redirs(cmd.redirs, io, lambda sub: self._compound(cmd, sub))

    def _compound(self, cmd: Any, io: IO) -> int:
        status = 0
        if isinstance(cmd, For):
            items = self.vars_positional() if cmd.items is None else [f for w in cmd.items for f in self.expand(w)]
            for item in items:
                self.vars[cmd.var] = item
                status = self.run_list(cmd.body, io)
            return status
        if isinstance(cmd, If):
            for cond, body in cmd.branches:
                if self._test(cond, io) == 0:
                    return self.run_list(body, io)
            return self.run_list(cmd.orelse, io) if cmd.orelse else 0
        for _ in range(10_000):  # While: a runaway loop ends instead of hanging the pod
            if (self._test(cmd.cond, io) == 0) == cmd.until:
                break
            status = self.run_list(cmd.body, io)
        return status

    def _test(self, cond: list[AndOr], io: IO) -> int:
        self._cond += 1
        try:
            return self.run_list(cond, io)
        finally:
            self._cond -= 1

    def vars_positional(self) -> list[str]:
        return list(self.positional)

    def _simple(self, cmd: Simple, io: IO) -> int:
        words = list(cmd.words)
        assigns = []
        while words and re.match(r"[A-Za-z_]\w*=", words[0]):
            name, _, value = words.pop(0).partition("=")
            assigns.append((name, value))
        argv = [f for w in words for f in self.expand(w)]
        for name, value in assigns:
            self.vars[name] = "".join(self.expand(value, split=False))
        if not argv:
            return 0
        return self.exec(argv, io)

    def _with_redirs(self, redirs: list[tuple[str, str]], io: IO, body: Callable[[IO], int]) -> int:
        if not redirs:
            return body(io)
        out, err, stdin = io.out, io.err, io.stdin
        pending: list[tuple[str, bool, list[str]]] = []
        for op, target in redirs:
            if op == "2>&1":
                err = out
                continue
            if op == ">&2":
                out = err
                continue
            path = "".join(self.expand(target, split=False))
            if op == "<":
                try:
                    stdin = self.read_file(path)
                except FsError as exc:
                    io.err(f"sh: {self.line}: cannot open {path}: {exc}\n")
                    return 2
                continue
            if path == "/dev/null":
                sink: Out = _discard
            else:
                problem = self.check_writable(path)
                if problem:
                    io.err(f"sh: {self.line}: cannot create {path}: {problem}\n")
                    return 2
                buf: list[str] = []
                pending.append((path, op.endswith(">>"), buf))
                sink = buf.append
            if op.startswith("2"):
                err = sink
            else:
                out = sink
        status = body(IO(stdin, out, err))
        for path, append, buf in pending:
            try:
                self.write_file(path, "".join(buf), append)
            except FsError as exc:
                io.err(f"sh: {self.line}: echo: echo: {exc}\n")
                status = 1
        return status

    # -- expansion ----------------------------------------------------------
    def expand(self, raw: str, *, split: bool = True) -> list[str]:
        pieces: list[tuple[str, bool]] = []  # (text, from an unquoted expansion)
        glob = False
        i, n = 0, len(raw)
        while i < n:
            c = raw[i]
            if c == "'":
                j = raw.index("'", i + 1)
                pieces.append((raw[i + 1:j], False))
                i = j + 1
            elif c == '"':
                j = skip_quoted(raw, i, self.line)
                pieces.append((self._expand_dq(raw[i + 1:j - 1]), False))
                i = j
            elif c == "\\":
                pieces.append((raw[i + 1:i + 2], False))
                i += 2
            elif c == "$" or c == "`":
                text, i = self._dollar(raw, i)
                pieces.append((text, split))
            else:
                j = i
                while j < n and raw[j] not in "'\"\\$`":
                    j += 1
                glob = glob or any(ch in raw[i:j] for ch in "*?[")
                pieces.append((raw[i:j], False))
                i = j
        fields = _split_fields(pieces)
        if glob and split:
            out: list[str] = []
            for f in fields:
                out.extend(self.glob(f) or [f])
            return out
        return fields if split else ["".join(t for t, _ in pieces)]

    def _expand_dq(self, s: str) -> str:
        out, i = [], 0
        while i < len(s):
            c = s[i]
            if c == "\\" and i + 1 < len(s) and s[i + 1] in '$`"\\\n':
                out.append(s[i + 1])
                i += 2
            elif c in "$`":
                text, i = self._dollar(s, i)
                out.append(text)
            else:
                out.append(c)
                i += 1
        return "".join(out)

    def _dollar(self, s: str, i: int) -> tuple[str, int]:
        if s[i] == "`":
            j = s.index("`", i + 1)
            return self.substitute(s[i + 1:j]), j + 1
        if s.startswith("$(", i):
            j = skip_quoted(s, i, self.line)
            if s.startswith("$((", i) and s[j - 2:j] == "))":
                return self.arithmetic(s[i + 3:j - 2]), j
            return self.substitute(s[i + 2:j - 1]), j
        if s.startswith("${", i):
            j = s.find("}", i)
            if j < 0:
                raise ShellError(f"{self.line}: Syntax error: Missing '}}'")
            return self.variable(s[i + 2:j]), j + 1
        m = re.match(r"[A-Za-z_]\w*|[0-9?#@*$!-]", s[i + 1:])
        if not m:
            return "$", i + 1
        return self.variable(m.group(0)), i + 1 + m.end()

    def variable(self, name: str) -> str:
        if name == "?":
            return str(self.status)
        if name == "#":
            return str(len(self.positional))
        if name in ("@", "*"):
            return " ".join(self.positional)
        if name == "$":
            return "4242"
        if name.isdigit():
            k = int(name)
            if k == 0:
                return self.vars.get("0", "sh")
            return self.positional[k - 1] if k <= len(self.positional) else ""
        return self.vars.get(name, "")

    def arithmetic(self, expr: str) -> str:
        """$((...)): integers, + - * / % and parentheses; names are variables."""
        text = re.sub(r"\$?([A-Za-z_]\w*)", lambda m: self.vars.get(m.group(1), "0") or "0", expr)
        text = self._expand_dq(text)
        if not re.fullmatch(r"[\d\s+\-*/%()]*", text) or "**" in text:
            raise ShellError(f"{self.line}: arithmetic expression: expecting primary: \"{expr.strip()}\"")
        try:
            value = eval(text.replace("/", "//") or "0", {"__builtins__": {}}, {})  # digits and operators only
        except (SyntaxError, ZeroDivisionError):
            raise ShellError(f"{self.line}: arithmetic expression: expecting primary: \"{expr.strip()}\"") from None
        return str(int(value))

    def substitute(self, src: str) -> str:
        buf: list[str] = []
        child = Shell(self.host, buf.append, chrooted=self.chrooted, variables=self.vars)
        child.positional = list(self.positional)
        child.line = self.line
        try:
            tree = parse(src)
            self.status = child.run_list(tree, IO("", buf.append, self.out))
        except _Exit as exc:
            self.status = exc.code
        return "".join(buf).rstrip("\n")

    def glob(self, pattern: str) -> list[str]:
        path = self.norm(pattern)
        depth = path.count("/")
        names = {p for p in self.all_paths() if p.count("/") == depth and fnmatch.fnmatchcase(p, path)}
        if pattern.startswith("/host/") and not self.chrooted:
            return sorted("/host" + p for p in names)
        return sorted(names)

    # -- commands -----------------------------------------------------------
    def exec(self, argv: list[str], io: IO, *, via: str = "") -> int:
        name = posixpath.basename(argv[0])
        name = {"[": "test", ":": "true"}.get(name, name)
        fn = getattr(self, "cmd_" + name, None) if name.isidentifier() else None
        if fn is None:
            if via == "nsenter":
                io.err(f"nsenter: failed to execute {argv[0]}: No such file or directory\n")
            elif via == "chroot":
                io.err(f"chroot: failed to run command '{argv[0]}': No such file or directory\n")
            else:
                io.err(f"sh: {self.line}: {argv[0]}: not found\n")
            self.status = 127
            return 127
        status = int(fn(argv[1:], io))
        self.status = status
        return status

    # builtins (the host tools are in guestcmds)
    def cmd_true(self, args: list[str], io: IO) -> int:
        return 0

    def cmd_false(self, args: list[str], io: IO) -> int:
        return 1

    def cmd_exit(self, args: list[str], io: IO) -> int:
        raise _Exit(int(args[0]) if args and args[0].isdigit() else self.status)

    def cmd_set(self, args: list[str], io: IO) -> int:
        for a in args:
            if a.startswith(("-", "+")) and "e" in a:
                self.errexit = a.startswith("-")
        return 0

    def cmd_export(self, args: list[str], io: IO) -> int:
        for a in args:
            name, eq, value = a.partition("=")
            if eq:
                self.vars[name] = value
        return 0

    def cmd_cd(self, args: list[str], io: IO) -> int:
        return 0

    def cmd_nsenter(self, args: list[str], io: IO) -> int:
        i = 0
        while i < len(args):
            a = args[i]
            if a == "--":
                i += 1
                break
            if not a.startswith("-"):
                break
            if a in ("-t", "--target"):
                i += 1
            i += 1
        rest = args[i:]
        return self.exec(rest, io, via="nsenter") if rest else 0

    def cmd_chroot(self, args: list[str], io: IO) -> int:
        if not args:
            io.err("chroot: missing operand\n")
            return 125
        root = posixpath.normpath(args[0])
        if root not in ("/", "/host") or (root == "/host" and self.chrooted):
            io.err(f"chroot: cannot change root directory to '{args[0]}': No such file or directory\n")
            return 125
        inner = Shell(self.host, self.out, chrooted=True, variables=self.vars)
        inner.errexit = self.errexit
        return inner.exec(args[1:], io, via="chroot") if len(args) > 1 else 0

    def cmd_sh(self, args: list[str], io: IO) -> int:
        child = Shell(self.host, self.out, chrooted=self.chrooted, variables=self.vars)
        opts = []
        while args and args[0].startswith("-") and args[0] != "-":
            opts.append(args.pop(0))
        if any("e" in o for o in opts):
            child.errexit = True
        if any("c" in o for o in opts):
            if not args:
                io.err("sh: 0: -c requires an argument\n")
                return 2
            src, rest = args[0], args[1:]
            if rest:
                child.vars["0"], child.positional = rest[0], rest[1:]
        elif args:
            try:
                src = self.read_file(args[0])
            except FsError:
                io.err(f"sh: 0: Can't open {args[0]}\n")
                return 127
            child.positional = args[1:]
        else:
            src = io.stdin
        try:
            tree = parse(src)
        except ShellError as exc:
            io.err(f"sh: {exc}\n")
            return 2
        try:
            return child.run_list(tree, io)
        except _Exit as exc:
            return exc.code

    cmd_bash = cmd_sh
    cmd_dash = cmd_sh


def _discard(_: str) -> None:
    return None


def _split_fields(pieces: list[tuple[str, bool]]) -> list[str]:
    """Field splitting: unquoted expansion results split on blanks, the rest joins."""
    out: list[str] = []
    cur, exists = "", False
    for text, splittable in pieces:
        if not splittable:
            cur += text
            exists = True
            continue
        if not text:
            continue
        words = text.split()
        if text[0].isspace() and exists:
            out.append(cur)
            cur, exists = "", False
        for k, w in enumerate(words):
            if k:
                out.append(cur)
                cur = ""
            cur += w
            exists = True
        if text[-1].isspace() and exists:
            out.append(cur)
            cur, exists = "", False
    if exists:
        out.append(cur)
    return out

