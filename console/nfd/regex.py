"""Go regular expressions (package regexp = RE2 syntax, linear time) for everything NFD matches.

NFD is Go: InRegexp values and matchName (pkg/apis/nfd/nodefeaturerule/expression.go, `regexp.Compile`
+ `MatchString`, i.e. an *unanchored* search), nfd-master's `-label-whitelist` (pkg/utils/flags.go
RegexpVal, `MatchString` on the label's base name) and the Sprig template functions regexMatch,
regexFind, regexFindAll, regexReplaceAll(Literal), regexSplit and their `must` forms (sprig regex.go).
Here they all go through google-re2 (the C++ RE2 that Go's regexp reimplements): matching is linear in
the input, so `(a+)+$` on 10,000 characters takes microseconds, not the age Python's backtracking `re`
takes.

Differences that matter, and how they are handled:
- Python-only syntax is an error, as in Go: lookahead `(?=` `(?!`, lookbehind `(?<=` `(?<!`,
  backreferences `\\1`, atomic groups `(?>`, possessive `a++`, conditionals `(?(1)`, `(?x)`, comments
  `(?#`, `\\Z` (Python's end of text: write `\\z`). `\\A` and `\\z` are valid Go.
- Python semantics differ even where the syntax is shared: `$` is end of text only (Python: also
  before a final newline), `\\d`/`\\w`/`\\s`/`\\b` are ASCII (Python: Unicode). RE2 has Go's semantics.
- C++ RE2 accepts what Go rejects: `\\C` (any byte) and non-ASCII group names; both are rejected
  here with Go's error. Group nesting 1000 deep is Go's "expression nests too deeply".
- `(?P<name>re)` and `(?<name>re)` are both Go (1.22+); POSIX classes `[[:alpha:]]`, `\\pL`,
  `\\p{Greek}` work in both. Recent Go also takes long or
  lower-case class names (`\\p{Letter}`, `\\p{greek}`: parse.go canonicalName); RE2 does not (an error here).
- Size: RE2 gets its default 8 MiB program budget, so a pattern like `\\pL{1000}` (fine in Go, whose
  limit is 128 MB) is refused as "expression too large" rather than compiled for seconds.

Errors read like Go's (`error parsing regexp: missing closing ): \\`(\\``), plus a hint for
Python-only syntax. Compiled patterns are cached (bounded LRU; NFD memoizes them too).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import re2

from console.nfd.budget import charge_value

MAX_MEM = 8 << 20  # RE2's own default program budget
CACHE_SIZE = 512
_MEMO_SIZE, _MEMO_KEY_MAX = 4096, 256  # per compiled regexp: at most ~1 MiB of remembered strings
SYNTAX_URL = "https://github.com/google/re2/wiki/Syntax"

# C++ RE2 error code text -> Go regexp/syntax ErrorCode text (src/regexp/syntax/parse.go)
_GO_CODES = {
    "missing )": "missing closing )",
    "missing ]": "missing closing ]",
    "unexpected )": "unexpected )",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid repetition size": "invalid repeat count",
    "invalid escape sequence": "invalid escape sequence",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid UTF-8": "invalid UTF-8",
    "invalid named capture group": "invalid named capture",
}

_HINTS = (
    (("(?=", "(?!"), "lookahead"),
    (("(?<=", "(?<!"), "lookbehind"),
    (("(?>",), "an atomic group"),
    (("(?(",), "a conditional"),
    (("(?P=",), "a named backreference"),
    (("(?#",), "a comment group"),
    (("(?x",), "verbose mode (?x)"),
    (("++", "*+", "?+", "}+"), "a possessive quantifier"),
)


class RegexpError(ValueError):
    """What Go's regexp.Compile returns: `error parsing regexp: <code>: \\`<expr>\\``."""

    def __init__(self, code: str, expr: str, hint: str = "") -> None:
        super().__init__(f"error parsing regexp: {code}: `{expr}`")
        self.code, self.expr, self.hint = code, expr, hint

    def describe(self) -> str:
        """The Go message plus, for Python/PCRE-only syntax, what it is and where the syntax is."""
        return f"{self} ({self.hint})" if self.hint else str(self)


def _python_hint(pattern: str, code: str, expr: str) -> str:
    what = ""
    for needles, name in _HINTS:  # Go's fragment may stop short of the needle: `(?P` for `(?P=name)`
        if any(expr.startswith(n) or (n.startswith(expr) and n in pattern) for n in needles):
            what = name
            break
    if code == "invalid escape sequence" and len(expr) == 2 and expr[1] in "123456789":
        what = "a backreference"
    elif code == "invalid escape sequence" and expr == r"\Z":
        what = r"Python's \Z (end of text is \z in Go)"
    if not what:
        return ""
    return f"{what} is Python/PCRE syntax; NFD uses Go's RE2 syntax, see {SYNTAX_URL}"


def _go_error(pattern: str, message: str) -> RegexpError:
    code, _, expr = message.partition(": ")
    if code.startswith("pattern too large"):
        return RegexpError("expression too large", pattern)
    go_code = _GO_CODES.get(code, "regexp/syntax: internal error")
    if code == "invalid perl operator" and expr in ("(?<=", "(?<!"):
        # Go reads `(?<` as a named group: "invalid named capture" up to the next '>'
        rest = pattern[pattern.find(expr):]
        end = rest.find(">")
        go_code, expr = "invalid named capture", rest if end < 0 else rest[:end + 1]
    elif code in ("missing )", "unexpected )"):
        expr = pattern  # Go names the whole expression for paren errors
    return RegexpError(go_code, expr, _python_hint(pattern, go_code, expr))


def _is_go_name(name: str) -> bool:
    return bool(name) and all(c == "_" or ("0" <= c <= "9") or ("a" <= c.lower() <= "z") for c in name)


def _scan_go_only(pattern: str) -> tuple[str | None, ...]:
    """Check what C++ RE2 accepts and Go rejects; return the capture group names (None = unnamed)."""
    names: list[str | None] = []
    stack: list[bool] = []  # open parens: capturing?
    depth = 0
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1:i + 2]
            if nxt == "C":
                raise RegexpError("invalid escape sequence", r"\C", "\\C (any byte) is not in Go's regexp")
            if nxt == "Q":
                end = pattern.find(r"\E", i + 2)
                i = n if end < 0 else end + 2
                continue
            i += 2
        elif c == "[":
            j = i + 1
            if pattern[j:j + 1] == "^":
                j += 1
            if pattern[j:j + 1] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                if pattern[j] == "\\":
                    j += 2
                elif pattern.startswith("[:", j) and pattern.find(":]", j + 2) >= 0:
                    j = pattern.find(":]", j + 2) + 2
                else:
                    j += 1
            i = j + 1
        elif c == "(":
            name: str | None = None
            capturing = not pattern.startswith("(?", i)
            for opener in ("(?P<", "(?<"):
                if pattern.startswith(opener, i) and not pattern.startswith(("(?<=", "(?<!"), i):
                    end = pattern.find(">", i)
                    if end >= 0:
                        name = pattern[i + len(opener):end]
                        if not _is_go_name(name):
                            raise RegexpError("invalid named capture", pattern[i:end + 1])
                        capturing = True
                    break
            if capturing:
                names.append(name)
                depth += 1
                if depth >= 1000:
                    raise RegexpError("expression nests too deeply", pattern)
            stack.append(capturing)
            i += 1
        elif c == ")":
            if stack and stack.pop():
                depth -= 1
            i += 1
        else:
            i += 1
    return tuple(names)


def _options(capture: bool) -> re2.Options:
    o = re2.Options()
    o.log_errors = False
    o.max_mem = MAX_MEM
    o.never_capture = not capture
    return o


_MATCH_OPTIONS, _CAPTURE_OPTIONS = _options(False), _options(True)


def _utf8(s: str) -> bytes:
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: Go's JSON decoding makes them U+FFFD
        return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


@dataclass(frozen=True)
class Regexp:
    """A compiled Go regexp; method names follow Go's (`MatchString` -> `match_string`)."""

    pattern: str
    names: tuple[str | None, ...]  # capture group names by index - 1
    _re: re2._Regexp = field(compare=False)
    # MatchString results for short strings: a rule meets the same feature names and values on every node
    # (modules, PCI ids, CPU flags), and the binding's per-call cost dominates a match that short
    _memo: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def match_string(self, s: str) -> bool:
        """regexp.MatchString: is there a match anywhere in `s` (unanchored)?"""
        hit = self._memo.get(s)
        if hit is None:
            hit = self._re.search(_utf8(s)) is not None
            if len(s) <= _MEMO_KEY_MAX:
                if len(self._memo) >= _MEMO_SIZE:
                    self._memo.clear()  # bounded: start over rather than track recency
                self._memo[s] = hit
        return hit

    def _spans(self, b: bytes, n: int = -1) -> list[tuple[int, int]]:
        # Go's allMatches: successive non-overlapping matches; an empty match right after a match is skipped
        if n < 0:
            n = len(b) + 1
        out: list[tuple[int, int]] = []
        pos, prev_end = 0, -1
        while len(out) < n and pos <= len(b):
            m = self._re.search(b, pos)
            if m is None:
                break
            start, end = m.span()
            accept = True
            if end == pos:
                accept = start != prev_end
                pos += _rune_width(b, pos) or len(b) + 1
            else:
                pos = end
            prev_end = end
            if accept:
                out.append((start, end))
        return out

    def find_string(self, s: str) -> str:
        """regexp.FindString: the leftmost match, "" when none."""
        m = self._re.search(_utf8(s))
        return _text(m.group()) if m is not None else ""

    def find_all_string(self, s: str, n: int) -> list[str]:
        """regexp.FindAllString (n < 0: all); Go returns nil (printed `[]`) when there is none."""
        b = _utf8(s)
        return [_text(b[a:e]) for a, e in self._spans(b, n)] if n else []

    def split(self, s: str, n: int) -> list[str]:
        """regexp.Split."""
        if n == 0:
            return []
        if self.pattern and not s:
            return [""]
        b = _utf8(s)
        parts: list[bytes] = []
        beg = end = 0
        for a, e in self._spans(b, n):
            if n > 0 and len(parts) == n - 1:
                break
            end = a
            if e != 0:
                parts.append(b[beg:end])
            beg = e
        if end != len(b):
            parts.append(b[beg:])
        return [_text(p) for p in parts]

    def replace_all_literal_string(self, s: str, repl: str) -> str:
        """regexp.ReplaceAllLiteralString."""
        r = _utf8(repl)
        return _text(self._replace_all(_utf8(s), lambda _m, _b: r, capture=False))

    def replace_all_string(self, s: str, repl: str) -> str:
        """regexp.ReplaceAllString: `$1`, `${1}`, `$name`, `${name}` expand, `$$` is `$`."""
        r = _utf8(repl)
        if b"$" not in r:
            return _text(self._replace_all(_utf8(s), lambda _m, _b: r, capture=False))
        return _text(self._replace_all(_utf8(s), lambda m, b: self._expand(r, b, m), capture=True))

    def _replace_all(self, b: bytes, repl: object, capture: bool) -> bytes:
        rx = compile_capturing(self.pattern) if capture else self._re
        out = bytearray()
        last_end = search_pos = 0
        while search_pos <= len(b):
            m = rx.search(b, search_pos)
            if m is None:
                break
            a, e = m.span()
            out += b[last_end:a]
            if e > last_end or a == 0:
                out += repl(m, b)  # type: ignore[operator]
                charge_value(len(out), "regexReplaceAll")  # an empty match per character × a long replacement
            last_end = e
            width = _rune_width(b, search_pos)  # advance at least one character
            if search_pos + width > e:
                search_pos += width
            elif search_pos + 1 > e:
                search_pos += 1
            else:
                search_pos = e
        out += b[last_end:]
        return bytes(out)

    def _expand(self, template: bytes, b: bytes, m: re2._Match) -> bytes:
        # regexp.(*Regexp).expand and extract (src/regexp/regexp.go)
        out = bytearray()
        t = template
        while t:
            before, dollar, after = t.partition(b"$")
            if not dollar:
                break
            out += before
            t = after
            if t[:1] == b"$":
                out += b"$"
                t = t[1:]
                continue
            name, rest = _extract(t)
            if name is None:
                out += b"$"
                continue
            t = rest
            num = int(name) if name.isascii() and name.isdigit() and len(name) <= 8 and not (
                name[0] == "0" and len(name) > 1) else -1
            for g in [num] if num >= 0 else [i + 1 for i, gn in enumerate(self.names) if gn == name]:
                if g <= len(self.names) and m.span(g)[0] >= 0:
                    out += b[slice(*m.span(g))]
                    break
        out += t
        return bytes(out)


def _extract(t: bytes) -> tuple[str | None, bytes]:
    s = _text(t)
    brace = s.startswith("{")
    if brace:
        s = s[1:]
    i = 0
    while i < len(s) and (s[i].isalpha() or s[i].isdigit() or s[i] == "_"):
        i += 1
    if i == 0 or (brace and s[i:i + 1] != "}"):
        return None, t
    name = s[:i]
    rest = s[i + 1:] if brace else s[i:]
    return name, _utf8(rest)


def _rune_width(b: bytes, pos: int) -> int:
    if pos >= len(b):
        return 0
    lead = b[pos]
    width = 1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    return max(1, min(width, len(b) - pos))


@functools.lru_cache(maxsize=CACHE_SIZE)
def compile_regexp(pattern: str) -> Regexp:
    """regexp.Compile with RE2; raises RegexpError with Go's message."""
    try:
        rx = re2.compile(_utf8(pattern), _MATCH_OPTIONS)
    except re2.error as exc:
        msg = exc.args[0] if exc.args else ""
        raise _go_error(pattern, msg.decode("utf-8", "replace") if isinstance(msg, bytes) else str(msg)) from None
    return Regexp(pattern, _scan_go_only(pattern), rx)


@functools.lru_cache(maxsize=CACHE_SIZE // 4)
def compile_capturing(pattern: str) -> re2._Regexp:
    """The same pattern with submatches (only `$1` expansion needs them; plain matching is faster without)."""
    return re2.compile(_utf8(pattern), _CAPTURE_OPTIONS)


def match_string(pattern: str, s: str) -> bool:
    """regexp.MatchString(pattern, s)."""
    return compile_regexp(pattern).match_string(s)


def quote_meta(s: str) -> str:
    """regexp.QuoteMeta: escape every regexp metacharacter."""
    return "".join("\\" + c if c in r"\.+*?()|[]{}^$" else c for c in s)
