"""A small POSIX-sh interpreter over a simulated guest: what a node-debug pod runs.

Enough of dash for the commands an admin (or the console) sends through a
privileged pod: lists (`;`, `&&`, `||`, newlines), pipes, `for`/`if`/`while`,
quoting, `$VAR`, `$(...)`, `$(seq a b)`, redirections (`>`, `>>`, `2>`,
`2>&1`, `< file`), `set -e`, and commands acting on the guest's sysfs/procfs:
`echo 1 > /sys/devices/system/cpu/cpuN/online`, `lscpu`, `nproc`,
`cat /proc/meminfo`, `systemctl restart kubelet`, `rm -f
/var/lib/kubelet/cpu_manager_state`. Errors read as dash's do
(`sh: 1: foo: not found`, exit 127; syntax errors exit 2).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from console.lab.vm import Guest

Out = Callable[[str], None]

OS_RELEASE = """NAME="Ubuntu"
VERSION="20.04.6 LTS (Focal Fossa)"
ID=ubuntu
ID_LIKE=debian
PRETTY_NAME="Ubuntu 20.04.6 LTS"
VERSION_ID="20.04"
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
VERSION_CODENAME=focal
UBUNTU_CODENAME=focal
"""
CPU_DIR = "/sys/devices/system/cpu"
RESERVED = {"for", "in", "do", "done", "if", "then", "elif", "else", "fi", "while", "until"}


class KubeletControl(Protocol):
    service: str  # active | activating | failed | inactive
    journal: list[str]

    def restart(self, *, wait: bool = False) -> None: ...
    def stop_service(self) -> None: ...
    def start_service(self) -> None: ...


@dataclass
class GuestHost:
    """What the shell acts on: the guest, the host's files, its kubelet service."""

    guest: Guest
    hostname: str
    files: dict[str, str] = field(default_factory=dict)
    kubelet: KubeletControl | None = None
    kernel_version: str = "5.4.0-165-generic"
    max_sleep: float = 2.0
    # called after a blocking `systemctl restart kubelet` (node exec cuts the log stream)
    on_kubelet_restart: Callable[[bool], None] | None = None


class ShellError(Exception):
    """A syntax error: message as dash prints it, exit status 2."""


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def cpu_list(cpus: Any) -> str:
    """The kernel's cpulist format: 0-7,9."""
    runs: list[list[int]] = []
    for c in sorted(cpus):
        if runs and runs[-1][1] == c - 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)


# -- lexer -------------------------------------------------------------------
@dataclass
class Tok:
    kind: str  # word | op
    text: str
    line: int


_OPS = ("&&", "||", ";;", ">>", "2>&1", ">&2", "2>>", "2>", ";", "|", "&", ">", "<", "(", ")", "\n")


def tokenize(src: str) -> list[Tok]:
    toks: list[Tok] = []
    i, line, n = 0, 1, len(src)
    word: list[str] = []

    def flush() -> None:
        if word:
            toks.append(Tok("word", "".join(word), line))
            word.clear()

    while i < n:
        c = src[i]
        if c in " \t":
            flush()
            i += 1
        elif c == "#" and not word:
            while i < n and src[i] != "\n":
                i += 1
        elif c == "\\" and i + 1 < n:
            if src[i + 1] == "\n":
                i += 2
                line += 1
            else:
                word.append(src[i:i + 2])
                i += 2
        elif c == "'":
            j = src.find("'", i + 1)
            if j < 0:
                raise ShellError(f"{line}: Syntax error: Unterminated quoted string")
            word.append(src[i:j + 1])
            line += src.count("\n", i, j)
            i = j + 1
        elif c == '"' or (c == "$" and src.startswith("$(", i)) or c == "`":
            j = _skip_quoted(src, i, line)
            word.append(src[i:j])
            line += src.count("\n", i, j)
            i = j
        else:
            op = next((o for o in _OPS if src.startswith(o, i)), None)
            if op and op.startswith("2") and word:
                op = None  # "a2>" is a word character run
            if op:
                flush()
                toks.append(Tok("op", op, line))
                line += op == "\n"
                i += len(op)
            else:
                word.append(c)
                i += 1
    flush()
    return toks


def _skip_quoted(src: str, i: int, line: int) -> int:
    """End index of the quoted/substituted construct starting at src[i]."""
    n = len(src)
    if src[i] == '"':
        j = i + 1
        while j < n and src[j] != '"':
            if src[j] == "\\":
                j += 2
            elif src.startswith("$(", j):
                j = _skip_quoted(src, j, line)
            else:
                j += 1
        if j >= n:
            raise ShellError(f"{line}: Syntax error: Unterminated quoted string")
        return j + 1
    if src[i] == "`":
        j = src.find("`", i + 1)
        if j < 0:
            raise ShellError(f"{line}: Syntax error: EOF in backquote substitution")
        return j + 1
    depth, j = 1, i + 2
    while j < n and depth:
        if src[j] in "'\"":
            if src[j] == "'":
                k = src.find("'", j + 1)
                if k < 0:
                    break
                j = k + 1
            else:
                j = _skip_quoted(src, j, line)
            continue
        if src[j] == "(":
            depth += 1
        elif src[j] == ")":
            depth -= 1
        j += 1
    if depth:
        raise ShellError(f"{line}: Syntax error: end of file unexpected (expecting \")\")")
    return j


# -- parser ------------------------------------------------------------------
@dataclass
class Simple:
    words: list[str]
    redirs: list[tuple[str, str]]
    line: int


@dataclass
class Pipeline:
    cmds: list[Any]
    negate: bool = False


@dataclass
class AndOr:
    parts: list[tuple[str, Pipeline]]  # ("", p), ("&&", p), ("||", p)


@dataclass
class For:
    var: str
    items: list[str] | None
    body: list[AndOr]
    redirs: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class If:
    branches: list[tuple[list[AndOr], list[AndOr]]]
    orelse: list[AndOr] | None
    redirs: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class While:
    cond: list[AndOr]
    body: list[AndOr]
    until: bool
    redirs: list[tuple[str, str]] = field(default_factory=list)


class Parser:
    def __init__(self, toks: list[Tok]) -> None:
        self.toks, self.i = toks, 0

    def peek(self) -> Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def is_word(self, text: str) -> bool:
        t = self.peek()
        return t is not None and t.kind == "word" and t.text == text

    def _unexpected(self, expecting: str | None = None) -> ShellError:
        t = self.peek()
        if t is None:
            line = self.toks[-1].line if self.toks else 1
            return ShellError(f"{line}: Syntax error: end of file unexpected"
                              + (f' (expecting "{expecting}")' if expecting else ""))
        text = "newline" if t.text == "\n" else t.text
        return ShellError(f'{t.line}: Syntax error: "{text}" unexpected'
                          + (f' (expecting "{expecting}")' if expecting and t.kind == "word" else ""))

    def skip_newlines(self) -> None:
        while (t := self.peek()) is not None and t.kind == "op" and t.text == "\n":
            self.i += 1

    def program(self) -> list[AndOr]:
        body = self.compound_list(())
        if self.peek() is not None:
            raise self._unexpected()
        return body

    def compound_list(self, stops: tuple[str, ...], expecting: str | None = None) -> list[AndOr]:
        out: list[AndOr] = []
        while True:
            self.skip_newlines()
            t = self.peek()
            if t is None or (t.kind == "word" and t.text in stops) or (t.kind == "op" and t.text == ")"):
                break
            out.append(self.and_or())
            t = self.peek()
            if t is not None and t.kind == "op" and t.text in (";", "&", "\n"):
                self.i += 1
            elif t is not None and not (t.kind == "word" and t.text in stops):
                raise self._unexpected(expecting)
        if stops and not out:
            raise self._unexpected(expecting)
        return out

    def and_or(self) -> AndOr:
        parts = [("", self.pipeline())]
        while (t := self.peek()) is not None and t.kind == "op" and t.text in ("&&", "||"):
            self.i += 1
            self.skip_newlines()
            parts.append((t.text, self.pipeline()))
        return AndOr(parts)

    def pipeline(self) -> Pipeline:
        negate = self.is_word("!")
        if negate:
            self.i += 1
        cmds = [self.command()]
        while (t := self.peek()) is not None and t.kind == "op" and t.text == "|":
            self.i += 1
            self.skip_newlines()
            cmds.append(self.command())
        return Pipeline(cmds, negate)

    def expect_word(self, text: str) -> None:
        if not self.is_word(text):
            raise self._unexpected(text)
        self.i += 1

    def command(self) -> Any:
        t = self.peek()
        if t is None:
            raise self._unexpected()
        if t.kind == "word" and t.text == "for":
            self.i += 1
            var = self.peek()
            if var is None or var.kind != "word" or not re.fullmatch(r"[A-Za-z_]\w*", var.text):
                raise ShellError(f"{t.line}: Syntax error: Bad for loop variable")
            self.i += 1
            items = None
            self.skip_newlines()
            if self.is_word("in"):
                self.i += 1
                items = []
                while (w := self.peek()) is not None and w.kind == "word":
                    items.append(w.text)
                    self.i += 1
                if (w := self.peek()) is not None and w.kind == "op" and w.text in (";", "\n"):
                    self.i += 1
            elif (w := self.peek()) is not None and w.kind == "op" and w.text == ";":
                self.i += 1
            self.skip_newlines()
            self.expect_word("do")
            body = self.compound_list(("done",), "done")
            self.expect_word("done")
            return For(var.text, items, body, self.redirections())
        if t.kind == "word" and t.text == "if":
            self.i += 1
            branches = []
            cond = self.compound_list(("then",), "then")
            self.expect_word("then")
            branches.append((cond, self.compound_list(("elif", "else", "fi"), "fi")))
            orelse = None
            while True:
                if self.is_word("elif"):
                    self.i += 1
                    c = self.compound_list(("then",), "then")
                    self.expect_word("then")
                    branches.append((c, self.compound_list(("elif", "else", "fi"), "fi")))
                elif self.is_word("else"):
                    self.i += 1
                    orelse = self.compound_list(("fi",), "fi")
                else:
                    break
            self.expect_word("fi")
            return If(branches, orelse, self.redirections())
        if t.kind == "word" and t.text in ("while", "until"):
            self.i += 1
            cond = self.compound_list(("do",), "do")
            self.expect_word("do")
            body = self.compound_list(("done",), "done")
            self.expect_word("done")
            return While(cond, body, t.text == "until", self.redirections())
        if t.kind == "word" and t.text in RESERVED:
            raise self._unexpected()
        words: list[str] = []
        redirs: list[tuple[str, str]] = []
        while (t2 := self.peek()) is not None:
            if t2.kind == "word":
                words.append(t2.text)
                self.i += 1
            elif t2.text in (">", ">>", "<", "2>", "2>>"):
                self.i += 1
                target = self.peek()
                if target is None or target.kind != "word":
                    raise self._unexpected()
                redirs.append((t2.text, target.text))
                self.i += 1
            elif t2.text in ("2>&1", ">&2"):
                redirs.append((t2.text, ""))
                self.i += 1
            else:
                break
        if not words and not redirs:
            raise self._unexpected()
        return Simple(words, redirs, t.line)

    def redirections(self) -> list[tuple[str, str]]:
        redirs = []
        while (t := self.peek()) is not None and t.kind == "op" and t.text in (">", ">>", "2>", "2>&1", ">&2"):
            self.i += 1
            target = ""
            if t.text not in ("2>&1", ">&2"):
                w = self.peek()
                if w is None or w.kind != "word":
                    raise self._unexpected()
                target = w.text
                self.i += 1
            redirs.append((t.text, target))
        return redirs


def parse(src: str) -> list[AndOr]:
    return Parser(tokenize(src)).program()


# -- interpreter -------------------------------------------------------------
@dataclass
class IO:
    stdin: str
    out: Out
    err: Out


class _FsError(Exception):
    """errno text: "No such file or directory", "Is a directory", "Permission denied", ..."""


class Shell:
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
                except _FsError as exc:
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
            except _FsError as exc:
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
                j = _skip_quoted(raw, i, self.line)
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
            j = _skip_quoted(s, i, self.line)
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

    # builtins and the handful of host tools
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
            except _FsError as exc:
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
            except _FsError as exc:
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
            except _FsError:
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

    # -- the guest's filesystem ---------------------------------------------
    def norm(self, path: str) -> str:
        if not self.chrooted and (path == "/host" or path.startswith("/host/")):
            path = path[5:] or "/"
        return posixpath.normpath(posixpath.join("/", path))

    def _virtual(self) -> dict[str, str]:
        g = self.host.guest
        present = set(range(g.present_vcpus))
        online = set(g.online_cpus)
        files = {
            "/proc/meminfo": _meminfo(g.mem_total_kib),
            f"{CPU_DIR}/online": cpu_list(online) + "\n",
            f"{CPU_DIR}/offline": cpu_list(present - online) + "\n",
            f"{CPU_DIR}/present": cpu_list(present) + "\n",
            f"{CPU_DIR}/possible": cpu_list(present) + "\n",
            "/etc/os-release": OS_RELEASE,
            "/etc/hostname": self.host.hostname + "\n",
            "/proc/version": f"Linux version {self.host.kernel_version} (buildd@lcy02-amd64-001)\n",
        }
        for n in sorted(present):
            files[f"{CPU_DIR}/cpu{n}/topology/core_id"] = f"{n}\n"
            if n:  # on x86 cpu0 has no online file
                files[f"{CPU_DIR}/cpu{n}/online"] = "1\n" if n in online else "0\n"
        return files

    def all_paths(self) -> set[str]:
        files = set(self._virtual()) | set(self.host.files)
        dirs = {posixpath.dirname(p) for p in files}
        while True:
            more = {posixpath.dirname(d) for d in dirs} - dirs
            if not more:
                break
            dirs |= more
        return files | dirs

    def is_dir(self, p: str) -> bool:
        p = self.norm(p)
        prefix = p.rstrip("/") + "/"
        return p == "/" or any(q.startswith(prefix) for q in (*self._virtual(), *self.host.files))

    def exists(self, p: str) -> bool:
        p = self.norm(p)
        return p in self.host.files or p in self._virtual() or self.is_dir(p)

    def read_file(self, path: str) -> str:
        p = self.norm(path)
        virtual = self._virtual()
        if p in virtual:
            return virtual[p]
        if p in self.host.files:
            return self.host.files[p]
        if self.is_dir(p):
            raise _FsError("Is a directory")
        raise _FsError("No such file or directory")

    def check_writable(self, path: str) -> str | None:
        """Why a redirection cannot create `path` (dash's "cannot create" reasons), or None."""
        p = self.norm(path)
        if p.startswith(("/sys/", "/proc/")):
            if p in self._virtual():
                return None
            return "Permission denied" if self.is_dir(posixpath.dirname(p)) else "Directory nonexistent"
        if self.is_dir(p):
            return "Is a directory"
        return None

    def write_file(self, path: str, data: str, append: bool) -> None:
        p = self.norm(path)
        m = re.fullmatch(rf"{CPU_DIR}/cpu(\d+)/online", p)
        if m:
            value = data.strip()
            if value not in ("0", "1"):
                raise _FsError("I/O error")
            try:
                self.host.guest.set_cpu_online(int(m.group(1)), value == "1")
            except (ValueError, RuntimeError):
                raise _FsError("I/O error") from None
            return
        if p.startswith(("/sys/", "/proc/")):
            raise _FsError("I/O error")
        self.host.files[p] = (self.host.files.get(p, "") if append else "") + data


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


def _meminfo(total_kib: int) -> str:
    free = total_kib * 62 // 100
    rows = [("MemTotal", total_kib), ("MemFree", free), ("MemAvailable", total_kib * 81 // 100),
            ("Buffers", total_kib // 60), ("Cached", total_kib * 15 // 100), ("SwapCached", 0),
            ("Active", total_kib // 5), ("Inactive", total_kib // 9), ("SwapTotal", 0), ("SwapFree", 0),
            ("Dirty", 128), ("Shmem", 2048), ("Slab", total_kib // 40), ("CommitLimit", total_kib // 2),
            ("Committed_AS", total_kib // 4), ("VmallocTotal", 34359738367), ("HugePages_Total", 0),
            ("HugePages_Free", 0), ("Hugepagesize", 2048)]
    return "".join(
        f"{k + ':':<16}{v:>8}\n" if k.startswith("HugePages_") else f"{k + ':':<16}{v:>8} kB\n" for k, v in rows
    )
