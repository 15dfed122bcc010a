"""A Go text/template subset, as NFD runs labelsTemplate/varsTemplate (missingkey=error).

Supported: text, `{{- -}}` trimming, comments, pipelines with `|`, parenthesised pipelines, fields
(`.cpu.cpuid`, `.Name`, `$e.Value`), variables (`$x := ..`, `$x = ..`, `range $i, $e := ..`),
`if`/`else if`/`else`/`end`, `range` (with `else`), `with`, string/number/bool literals, the Go
builtins (and or not len index print printf println eq ne lt le gt ge) and, for NFD v0.18+, a
subset of Sprig. Anything else is a clear parse error rather than a silent mismatch.
"""

from __future__ import annotations

import contextlib
import re
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from console.nfd.budget import Budget, BudgetExceeded, current_budget
from console.nfd.template_sprig import function_map
from console.nfd.template_values import NO_VALUE, TemplateError, go_format, sorted_keys, truth

# ---------------------------------------------------------------- lexing

_TOKEN_RE = re.compile(
    r"""\s*(?:
      (?P<str>"(?:[^"\\\n]|\\[^\n])*")
    | (?P<raw>`[^`]*`)
    | (?P<char>'(?:[^'\\]|\\.)')
    | (?P<decl>:=)
    | (?P<assign>=)
    | (?P<pipe>\|)
    | (?P<lp>\()
    | (?P<rp>\))
    | (?P<comma>,)
    | (?P<var>\$[A-Za-z0-9_]*)
    | (?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+)
    | (?P<dot>\.)
    | (?P<num>[+-]?(?:0[xX][0-9a-fA-F]+|[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?))
    | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.VERBOSE,
)
_CHAIN_RE = re.compile(r"(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
# matched at a position (never on a copy of the rest of the source, which made parsing quadratic)
_COMMENT_START = re.compile(r"\s*/\*")
_TRIM_SPACE = re.compile(r"[ \t\r\n]*")


@dataclass
class _Tok:
    kind: str
    text: str


def _tokenize(src: str, line: int) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    while pos < len(src):
        if src[pos:].strip() == "":
            break
        m = _TOKEN_RE.match(src, pos)
        if not m and src[pos:].lstrip()[:1] == '"':  # lex.go lexQuote: a newline or the end before the quote
            raise TemplateError(f"template: :{line}: unterminated quoted string")
        if not m or m.end() == pos:
            raise TemplateError(f"template: :{line}: unexpected {src[pos:].strip()[:1]!r} in command")
        kind = m.lastgroup or ""
        toks.append(_Tok(kind, m.group(kind)))
        pos = m.end()
        # a field chain directly after ')' or a variable: (..).Foo / $x.Foo
        if kind in ("rp", "var"):
            cm = _CHAIN_RE.match(src, pos)
            if cm:
                toks.append(_Tok("chain", cm.group(0)))
                pos = cm.end()
    return toks


# ---------------------------------------------------------------- tree

@dataclass
class _Node:
    kind: str  # field, var, dot, str, num, bool, nil, ident, pipe
    value: Any = None
    chain: tuple[str, ...] = ()
    text: str = ""


@dataclass
class _Pipe:
    decl: list[str] = field(default_factory=list)
    assign: bool = False  # '=' instead of ':='
    cmds: list[list[_Node]] = field(default_factory=list)
    line: int = 1
    text: str = ""


@dataclass
class _Block:
    kind: str  # text, action, if, range, with
    text: str = ""
    pipe: _Pipe | None = None
    body: list[_Block] = field(default_factory=list)
    else_body: list[_Block] = field(default_factory=list)


_KEYWORDS = {"if", "else", "end", "range", "with", "define", "template", "block", "break", "continue"}


class _Parser:
    def __init__(self, src: str, funcs: Mapping[str, Callable[..., Any]]) -> None:
        self.src = src
        self.funcs = funcs
        self.items = self._split(src)
        self.i = 0

    @staticmethod
    def _split(src: str) -> list[tuple[str, str, int]]:
        """[(kind 'text'|'action', content, line)] with trim markers applied."""
        out: list[tuple[str, str, int]] = []
        pos = 0
        lines_at = [0, 1]  # [offset, line number there]: counted incrementally (a big template stays linear)

        def line_of(i: int) -> int:
            lines_at[1] += src.count("\n", lines_at[0], i)
            lines_at[0] = i
            return lines_at[1]

        while True:
            start = src.find("{{", pos)
            if start < 0:
                out.append(("text", src[pos:], line_of(pos)))
                break
            text = src[pos:start]
            inner_start = start + 2
            if src.startswith("- ", inner_start) or src.startswith("-\t", inner_start) or src.startswith(
                    "-\n", inner_start):
                text = text.rstrip(" \t\r\n")
                inner_start += 1
            out.append(("text", text, line_of(pos)))
            line = line_of(start)
            if _COMMENT_START.match(src, inner_start):
                cend = src.find("*/", inner_start)
                if cend < 0:
                    raise TemplateError(f"template: :{line}: unclosed comment")
                end = src.find("}}", cend)
            else:
                end = _find_close(src, inner_start)
            if end < 0:
                raise TemplateError(f"template: :{line}: unclosed action")
            inner = src[inner_start:end]
            pos = end + 2
            if inner.endswith(" -") or inner.endswith("\t-") or inner.endswith("\n-"):
                inner = inner[:-1]
                pos = _TRIM_SPACE.match(src, pos).end()  # type: ignore[union-attr]
            if inner.strip().startswith("/*"):
                continue
            out.append(("action", inner, line))
        return out

    def parse(self) -> list[_Block]:
        body, stop = self._list()
        if stop is not None:
            raise TemplateError(f"template: :{stop[1]}: unexpected {{{{{stop[0]}}}}}")
        return body

    def _list(self) -> tuple[list[_Block], tuple[str, int, str] | None]:
        body: list[_Block] = []
        while self.i < len(self.items):
            kind, content, line = self.items[self.i]
            self.i += 1
            if kind == "text":
                if content:
                    body.append(_Block("text", text=content))
                continue
            word = content.strip().split(None, 1)
            head = word[0] if word else ""
            rest = word[1] if len(word) > 1 else ""
            if head in ("end", "else"):
                return body, (head, line, rest)
            if head in ("if", "range", "with"):
                body.append(self._control(head, rest, line))
            elif head in _KEYWORDS:
                raise TemplateError(f"template: :{line}: {{{{{head}}}}} is not supported by the console's template "
                                    "engine")
            elif not content.strip():
                raise TemplateError(f"template: :{line}: missing value for command")
            else:
                body.append(_Block("action", pipe=self._pipeline(content, line)))
        return body, None

    def _control(self, head: str, rest: str, line: int) -> _Block:
        if not rest.strip():
            raise TemplateError(f"template: :{line}: missing value for {head}")
        blk = _Block(head, pipe=self._pipeline(rest, line, allow_two=head == "range"))
        blk.body, stop = self._list()
        if stop is None:
            raise TemplateError(f"template: :{line}: unexpected EOF")
        if stop[0] == "else":
            if stop[2].strip().startswith(("if ", "with ")) and head != "range":
                sub_head, sub_rest = stop[2].strip().split(None, 1)
                # `else if` chains end with the outer {{end}}
                blk.else_body = [self._control(sub_head, sub_rest, stop[1])]
                return blk
            if stop[2].strip():
                raise TemplateError(f"template: :{stop[1]}: unexpected {stop[2].strip()!r} in else")
            blk.else_body, stop2 = self._list()
            if stop2 is None or stop2[0] != "end":
                raise TemplateError(f"template: :{line}: expected end; found {stop2[0] if stop2 else 'EOF'}")
        return blk

    def _pipeline(self, src: str, line: int, allow_two: bool = False) -> _Pipe:
        toks = _tokenize(src, line)
        pipe = _Pipe(line=line, text=src.strip())
        # declarations
        if toks and toks[0].kind == "var":
            if len(toks) > 1 and toks[1].kind in ("decl", "assign"):
                pipe.decl, pipe.assign = [toks[0].text], toks[1].kind == "assign"
                toks = toks[2:]
            elif allow_two and len(toks) > 3 and toks[1].kind == "comma" and toks[2].kind == "var" and toks[3].kind in (
                    "decl", "assign"):
                pipe.decl, pipe.assign = [toks[0].text, toks[2].text], toks[3].kind == "assign"
                toks = toks[4:]
        pos = 0
        cmd: list[_Node] = []
        while pos < len(toks):
            t = toks[pos]
            if t.kind == "pipe":
                if not cmd:
                    raise TemplateError(f"template: :{line}: missing command")
                pipe.cmds.append(cmd)
                cmd = []
                pos += 1
                continue
            node, pos = self._operand(toks, pos, line)
            cmd.append(node)
        if cmd:
            pipe.cmds.append(cmd)
        if not pipe.cmds:
            raise TemplateError(f"template: :{line}: missing value for command")
        return pipe

    def _operand(self, toks: list[_Tok], pos: int, line: int) -> tuple[_Node, int]:
        t = toks[pos]
        pos += 1
        if t.kind == "lp":
            depth, j = 1, pos
            while j < len(toks) and depth:
                depth += {"lp": 1, "rp": -1}.get(toks[j].kind, 0)
                j += 1
            if depth:
                raise TemplateError(f"template: :{line}: unclosed left paren")
            inner = toks[pos:j - 1]
            sub = _Pipe(line=line, text="(...)")
            cmd: list[_Node] = []
            k = 0
            while k < len(inner):
                if inner[k].kind == "pipe":
                    sub.cmds.append(cmd)
                    cmd = []
                    k += 1
                    continue
                n, k = self._operand(inner, k, line)
                cmd.append(n)
            if cmd:
                sub.cmds.append(cmd)
            if not sub.cmds:
                raise TemplateError(f"template: :{line}: missing value for command")
            node = _Node("pipe", value=sub, text="(...)")
            if j < len(toks) and toks[j].kind == "chain":
                node.chain = tuple(toks[j].text[1:].split("."))
                j += 1
            return node, j
        if t.kind == "field":
            return _Node("field", chain=tuple(t.text[1:].split(".")), text=t.text), pos
        if t.kind == "var":
            node = _Node("var", value=t.text, text=t.text)
            if pos < len(toks) and toks[pos].kind == "chain":
                node.chain = tuple(toks[pos].text[1:].split("."))
                node.text += toks[pos].text
                pos += 1
            return node, pos
        if t.kind == "dot":
            return _Node("dot", text="."), pos
        if t.kind == "str":
            return _Node("str", value=_unquote(t.text, line), text=t.text), pos
        if t.kind == "raw":
            return _Node("str", value=t.text[1:-1], text=t.text), pos
        if t.kind == "char":
            return _Node("num", value=ord(_unquote('"' + t.text[1:-1] + '"', line)), text=t.text), pos
        if t.kind == "num":
            txt = t.text
            val: Any = int(txt, 0) if re.fullmatch(r"[+-]?(0[xX][0-9a-fA-F]+|[0-9]+)", txt) else float(txt)
            return _Node("num", value=val, text=txt), pos
        if t.kind == "ident":
            if t.text in ("true", "false"):
                return _Node("bool", value=t.text == "true", text=t.text), pos
            if t.text == "nil":
                return _Node("nil", text="nil"), pos
            if t.text not in self.funcs:
                raise TemplateError(f'template: :{line}: function "{t.text}" not defined')
            return _Node("ident", value=t.text, text=t.text), pos
        raise TemplateError(f"template: :{line}: unexpected {t.text!r} in operand")


_CLOSE_OR_QUOTE = re.compile(r"}}|[\"'`]")


def _find_close(src: str, pos: int) -> int:
    """Index of the '}}' closing an action, skipping quoted strings."""
    i = pos
    while True:
        m = _CLOSE_OR_QUOTE.search(src, i)
        if m is None:
            return -1
        if m.group() == "}}":
            return m.start()
        c, j = m.group(), m.end()
        while j < len(src) and src[j] != c:
            j += 2 if (src[j] == "\\" and c != "`") else 1
        i = j + 1


def _unquote(s: str, line: int) -> str:
    try:
        return s[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError as exc:
        raise TemplateError(f"template: :{line}: invalid syntax in string {s}") from exc


# ---------------------------------------------------------------- execution

class Template:
    """A parsed template; `execute(data)` returns the expanded text."""

    def __init__(self, src: str, funcs: Mapping[str, Callable[..., Any]]) -> None:
        self.src = src
        self.funcs = funcs
        self.tree = _Parser(src, funcs).parse()

    def execute(self, data: Any, budget: Budget | None = None) -> str:
        """Expand with `data`; a budget (console.nfd.budget) bounds steps, output and time.

        Over budget is a TemplateError like any execution error; `Cancelled` passes through.
        """
        out: list[str] = []
        try:
            with (budget or Budget()).activate():
                self._run(self.tree, data, [("$", data)], out)
        except BudgetExceeded as exc:
            raise TemplateError(f'template: executing "": {exc}') from None
        except RecursionError:
            raise TemplateError('template: executing "": too deeply nested') from None
        return "".join(out)

    def _run(self, blocks: list[_Block], dot: Any, scope: list[tuple[str, Any]], out: list[str]) -> None:
        mark = len(scope)
        budget = current_budget()
        for b in blocks:
            budget.step()
            if b.kind == "text":
                budget.emit(len(b.text))
                out.append(b.text)
            elif b.kind == "action":
                assert b.pipe is not None
                v = self._pipe(b.pipe, dot, scope)
                if not b.pipe.decl:
                    # exec.go evalPipeline turns a nil interface result into an invalid Value: <no value>
                    text = go_format(NO_VALUE if v is None else v)
                    budget.emit(len(text))
                    out.append(text)
            elif b.kind in ("if", "with"):
                assert b.pipe is not None
                inner_mark = len(scope)
                v = self._pipe(b.pipe, dot, scope)
                if truth(v):
                    self._run(b.body, v if b.kind == "with" else dot, scope, out)
                else:
                    self._run(b.else_body, dot, scope, out)
                del scope[inner_mark:]
            elif b.kind == "range":
                self._range(b, dot, scope, out)
        del scope[mark:]

    def _range(self, b: _Block, dot: Any, scope: list[tuple[str, Any]], out: list[str]) -> None:
        assert b.pipe is not None
        decl, b.pipe.decl = b.pipe.decl, []
        try:
            v = self._pipe(b.pipe, dot, scope)
        finally:
            b.pipe.decl = decl
        items: Iterable[tuple[Any, Any]]
        if isinstance(v, Mapping):
            items = [(k, v[k]) for k in sorted_keys(v)]
        elif isinstance(v, Sequence) and not isinstance(v, str):
            items = list(enumerate(v))
        elif isinstance(v, int) and not isinstance(v, bool):
            items = ((i, i) for i in range(v))  # lazily: `range 2000000000` is bounded by the step budget
        elif v is None or v is NO_VALUE:
            items = []
        else:
            raise self._err(b.pipe, f"range can't iterate over {go_format(v)}")
        if (v <= 0) if isinstance(items, Iterator) else not items:
            self._run(b.else_body, dot, scope, out)
            return
        budget = current_budget()
        for k, elem in items:
            budget.step()
            mark = len(scope)
            if len(decl) == 1:
                scope.append((decl[0], elem))
            elif len(decl) == 2:
                scope.extend([(decl[0], k), (decl[1], elem)])
            self._run(b.body, elem, scope, out)
            del scope[mark:]

    def _err(self, pipe: _Pipe, msg: str) -> TemplateError:
        return TemplateError(f'template: :{pipe.line}: executing "" at <{pipe.text}>: {msg}')

    def _pipe(self, pipe: _Pipe, dot: Any, scope: list[tuple[str, Any]]) -> Any:
        val: Any = NO_VALUE
        for i, cmd in enumerate(pipe.cmds):
            val = self._cmd(pipe, cmd, dot, scope, val if i else None, i > 0)
        if pipe.decl:
            name = pipe.decl[0]
            if pipe.assign:
                for j in range(len(scope) - 1, -1, -1):
                    if scope[j][0] == name:
                        scope[j] = (name, val)
                        break
                else:
                    raise self._err(pipe, f"undefined variable: {name}")
            else:
                scope.append((name, val))
        return val

    def _cmd(self, pipe: _Pipe, cmd: list[_Node], dot: Any, scope: list[tuple[str, Any]], piped: Any,
             has_piped: bool) -> Any:
        current_budget().step()
        first = cmd[0]
        if first.kind == "ident":
            fn = self.funcs[first.value]
            if first.value in ("and", "or"):
                return self._andor(pipe, first.value, cmd[1:], dot, scope, piped, has_piped)
            args = [self._arg(pipe, n, dot, scope) for n in cmd[1:]]
            if has_piped:
                args.append(piped)
            return self._call(pipe, first.value, fn, args)
        if len(cmd) > 1 or has_piped:
            raise self._err(pipe, f"can't give argument to non-function {first.text}")
        return self._arg(pipe, first, dot, scope)

    def _call(self, pipe: _Pipe, name: str, fn: Callable[..., Any], args: list[Any]) -> Any:
        want, variadic = _arity(fn)
        if len(args) < want or (not variadic and len(args) > want):
            raise self._err(pipe, f"wrong number of args for {name}: want {'at least ' if variadic else ''}{want} "
                                  f"got {len(args)}")
        try:
            result = fn(*args)
        except (TemplateError, BudgetExceeded):
            raise
        except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError, OverflowError,
                AttributeError) as exc:
            raise self._err(pipe, f"error calling {name}: {exc}") from exc
        if isinstance(result, str):
            current_budget().value(len(result), name)
        return result

    def _andor(self, pipe: _Pipe, name: str, nodes: list[_Node], dot: Any, scope: list[tuple[str, Any]],
               piped: Any, has_piped: bool) -> Any:
        if len(nodes) + has_piped < 1:
            raise self._err(pipe, f"wrong number of args for {name}: want at least 1 got 0")
        val: Any = None
        thunks: list[Callable[[], Any]] = [partial(self._arg, pipe, n, dot, scope) for n in nodes]
        if has_piped:
            thunks.append(lambda: piped)
        for t in thunks:
            val = t()
            if truth(val) != (name == "and"):
                return val
        return val

    def _arg(self, pipe: _Pipe, n: _Node, dot: Any, scope: list[tuple[str, Any]]) -> Any:
        if n.kind in ("str", "num", "bool"):
            return n.value
        if n.kind == "nil":
            raise self._err(pipe, "nil is not a command")
        if n.kind == "dot":
            return dot
        if n.kind == "ident":  # a function as an argument is called without arguments
            return self._call(pipe, n.value, self.funcs[n.value], [])
        if n.kind == "field":
            return self._chain(pipe, dot, n.chain, n.text)
        if n.kind == "var":
            for name, val in reversed(scope):
                if name == n.value:
                    return self._chain(pipe, val, n.chain, n.text)
            raise TemplateError(f"template: :{pipe.line}: undefined variable \"{n.value}\"")
        if n.kind == "pipe":
            return self._chain(pipe, self._pipe(n.value, dot, scope), n.chain, n.text)
        raise self._err(pipe, f"can't evaluate {n.text}")

    def _chain(self, pipe: _Pipe, val: Any, chain: Sequence[str], text: str) -> Any:
        for name in chain:
            if isinstance(val, Mapping):
                if name not in val:
                    raise self._err(pipe, f'map has no entry for key "{name}"')
                val = val[name]
            elif val is None or val is NO_VALUE:
                raise self._err(pipe, f"nil pointer evaluating interface {{}}.{name}")
            else:
                raise self._err(pipe, f"can't evaluate field {name} in type {_go_type(val)}")
        return val


_ARITY: weakref.WeakKeyDictionary[Any, tuple[int, bool]] = weakref.WeakKeyDictionary()


def _arity(fn: Callable[..., Any]) -> tuple[int, bool]:
    """(fixed parameters, variadic) of a template function, as exec.go evalCall checks them before calling."""
    hit = _ARITY.get(fn)
    if hit is None:
        import inspect

        params = inspect.signature(fn).parameters.values()
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        required = sum(1 for p in positional if p.default is p.empty)
        variadic = any(p.kind == p.VAR_POSITIONAL for p in params) or required < len(positional)
        hit = (required, variadic)  # a Python default stands for a Go variadic tail
        with contextlib.suppress(TypeError):  # not weak-referenceable: not cached
            _ARITY[fn] = hit
    return hit


def _go_type(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, str):
        return "string"
    if isinstance(v, int):
        return "int"
    if isinstance(v, Sequence):
        return "[]nodefeaturerule.MatchedElement"
    return type(v).__name__


MAX_TEMPLATE_SIZE = 64 * 1024


def parse_template(src: str, sprig: bool = True, size_capped: bool = True) -> Template:
    """template.NewHelper: parse (errors are TemplateError with NFD's wording).

    v0.19 (`size_capped`) also removed Sprig's env, expandenv and getHostByName (commit 0c99ca0fb).
    """

    if size_capped and len(src) > MAX_TEMPLATE_SIZE:
        raise TemplateError(f"template exceeds maximum allowed size: {len(src)} bytes > {MAX_TEMPLATE_SIZE} limit")
    try:
        return Template(src, function_map(sprig, host_funcs=not size_capped))
    except TemplateError as exc:
        raise TemplateError(f"invalid template: {exc}") from None
    except RecursionError:
        raise TemplateError("invalid template: too deeply nested") from None


def goq(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def expand_map(tmpl: Template, data: Any, budget: Budget | None = None) -> dict[str, str]:
    """Helper.ExpandMap: execute, then every non-blank trimmed line must be `key=value`."""
    expanded = tmpl.execute(data, budget)
    out: dict[str, str] = {}
    for item in expanded.split("\n"):
        trimmed = item.strip()
        if trimmed:
            key, sep, value = trimmed.partition("=")
            if not sep:
                raise TemplateError(
                    f"missing value in expanded template line {goq(trimmed)}, (format must be '<key>=<value>')")
            out[key] = value
    return out
