"""The guest shell's syntax: a lexer and parser for the POSIX-sh subset `guestshell` runs.

Syntax errors raise `ShellError` with dash's wording (`sh: 1: Syntax error: ...`, exit 2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

RESERVED = {"for", "in", "do", "done", "if", "then", "elif", "else", "fi", "while", "until"}


class ShellError(Exception):
    """A syntax error: message as dash prints it, exit status 2."""


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
            j = skip_quoted(src, i, line)
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


def skip_quoted(src: str, i: int, line: int) -> int:
    """End index of the quoted/substituted construct starting at src[i]."""
    n = len(src)
    if src[i] == '"':
        j = i + 1
        while j < n and src[j] != '"':
            if src[j] == "\\":
                j += 2
            elif src.startswith("$(", j):
                j = skip_quoted(src, j, line)
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
                j = skip_quoted(src, j, line)
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
