"""Functions available to NFD templates: Go builtins, and a Sprig subset for v0.18+."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from console.nfd.budget import charge_value
from console.nfd.expressions import goq
from console.nfd.goconv import go_atoi, go_parse_int_base0, go_quote, trim_zero_decimal
from console.nfd.regex import Regexp, RegexpError, compile_regexp, quote_meta
from console.nfd.template_values import NO_VALUE, GoMap, TemplateError, go_format, truth


def _basic(v: Any) -> tuple[str, Any]:
    if isinstance(v, bool):
        return "bool", v
    if isinstance(v, int):
        return "int", v
    if isinstance(v, float):
        return "float", v
    if isinstance(v, str):
        return "string", v
    if v is None or v is NO_VALUE:
        return "nil", None
    raise TemplateError(f"invalid type for comparison: {go_format(v)}")


def _eq(a: Any, *bs: Any) -> bool:
    if not bs:
        raise TypeError("missing argument for comparison")
    ka, va = _basic(a)
    for b in bs:
        kb, vb = _basic(b)
        if ka != kb and not {ka, kb} <= {"int", "float"}:
            raise TemplateError(f"incompatible types for comparison: {ka} and {kb}")
        if va == vb:
            return True
    return False


def _cmp(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def f(a: Any, b: Any) -> bool:
        ka, va = _basic(a)
        kb, vb = _basic(b)
        if ka != kb and not {ka, kb} <= {"int", "float"}:
            raise TemplateError(f"incompatible types for comparison: {ka} and {kb}")
        if ka in ("bool", "nil"):
            raise TemplateError(f"invalid type for comparison: {ka}")
        return op(va, vb)
    return f


def _len(v: Any) -> int:
    if isinstance(v, str | Mapping | Sequence):
        return len(v)
    raise TemplateError(f"len of type {type(v).__name__}")


def _index(v: Any, *keys: Any) -> Any:
    for k in keys:
        if isinstance(v, Mapping):
            v = v.get(k, v.zero if isinstance(v, GoMap) else NO_VALUE)
        elif isinstance(v, Sequence):
            if not isinstance(k, int) or not 0 <= k < len(v):
                raise TemplateError(f"index out of range: {k}")
            v = v[k]
        else:
            raise TemplateError(f"can't index item of type {type(v).__name__}")
    return v


_VERB_RE = re.compile(r"%([-+# 0]*)(\d*)(?:\.(\d+))?([vsdqtxXf%])")
_GO_FMT_MAX = 1_000_000  # fmt/print.go tooLarge: a width or precision past 1e6 is "crazy long"


def _too_long(digits: str | None) -> bool:
    """fmt's parsenum gives up (and consumes the rest of the format) once the number passed 1e6 with digits left."""
    return digits is not None and len(digits) > 1 and int(digits[:-1]) > _GO_FMT_MAX


def _printf(fmt: str, *args: Any) -> str:
    out: list[str] = []
    pos = 0
    used = 0
    for m in _VERB_RE.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        if _too_long(m.group(2)) or _too_long(m.group(3)):
            out.append("%!(NOVERB)")  # Go: parsenum overflowed to the end of the format
            pos = len(fmt)
            break
        if m.group(4) != "%":
            used += 1
        out.append(_verb(m, args[used - 1] if 0 < used <= len(args) else None, used > len(args)))
    out.append(fmt[pos:])
    if used < len(args):  # Go appends the operands no verb used
        out.append("%!(EXTRA " + ", ".join(f"{_go_kind(a)}={go_format(a)}" for a in args[used:]) + ")")
    return _joined(out, "", "printf")


def _go_kind(a: Any) -> str:
    return {bool: "bool", int: "int", float: "float64", str: "string"}.get(type(a), "interface {}")


def _verb(m: re.Match[str], a: Any, missing: bool) -> str:
    flags, width, prec, verb = m.groups()
    if verb == "%":
        return "%"
    if missing:
        return f"%!{verb}(MISSING)"
    if width:
        charge_value(int(width), f"printf width {width}")
    if prec:
        charge_value(int(prec), f"printf precision {prec}")
    if verb == "q":
        s = '"' + go_format(a).replace("\\", "\\\\").replace('"', '\\"') + '"'
    elif verb in "dxX" and isinstance(a, int) and not isinstance(a, bool):
        s = format(a, {"d": "d", "x": "x", "X": "X"}[verb])
    elif verb == "f" and isinstance(a, int | float):
        s = f"{a:.{prec or 6}f}"
    else:
        s = go_format(a)
    if width:
        s = s.ljust(int(width)) if "-" in flags else s.rjust(int(width), "0" if "0" in flags else " ")
    return s


def _print(*args: Any) -> str:
    # fmt.Sprint adds spaces between operands when neither is a string
    out: list[str] = []
    for i, a in enumerate(args):
        if i and not isinstance(a, str) and not isinstance(args[i - 1], str):
            out.append(" ")
        out.append(go_format(a))
    return _joined(out, "", "print")


def _joined(parts: Sequence[str], sep: str, what: str) -> str:
    """sep.join(parts), refused before it is built when it would exceed the output budget."""
    charge_value(sum(map(len, parts)) + len(sep) * max(len(parts) - 1, 0), what)
    return sep.join(parts)


def _formatted_all(lst: Any, what: str) -> list[str]:
    """go_format of each element, refused as soon as their total passes the output budget."""
    out: list[str] = []
    total = 0
    for x in lst:
        out.append(go_format(x))
        total += len(out[-1])
        charge_value(total, what)
    return out


def _deep_equal(a: Any, b: Any, seen: set[tuple[int, int]]) -> bool:
    """reflect.DeepEqual as Sprig's `has` uses it: a pair of collections already being compared counts as equal
    (Go's visited map), so values that share structure compare in polynomial time, not exponential."""
    if isinstance(a, Mapping | list | tuple) and isinstance(b, Mapping | list | tuple):
        if type(a) is not type(b) or len(a) != len(b):
            return False
        key = (id(a), id(b))
        if a is b or key in seen:
            return True
        seen.add(key)
        if isinstance(a, Mapping):
            return all(k in b and _deep_equal(a[k], b[k], seen) for k in a)
        return all(_deep_equal(x, y, seen) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _join(sep: Any, lst: Any) -> str:
    parts: list[str] = []
    total = 0
    for x in lst if isinstance(lst, Sequence) and not isinstance(lst, str) else [lst]:
        parts.append(go_format(x))
        total += len(parts[-1]) + len(go_format(sep))
        charge_value(total, "join")  # element by element: many big elements are refused early
    return _joined(parts, go_format(sep), "join")


def _slice(item: Any, *indexes: Any) -> Any:
    """text/template funcs.go slice: item[i:j(:k)] with Go's checks (strings slice their UTF-8 bytes)."""
    if len(indexes) > 3:
        raise ValueError(f"too many slice indexes: {len(indexes)}")
    if isinstance(item, str):
        if len(indexes) == 3:
            raise ValueError("cannot 3-index slice a string")
        data: Any = item.encode()
    elif isinstance(item, list | tuple):
        data = item
    else:
        raise ValueError(f"can't slice item of type {type(item).__name__}")
    idx = [0, len(data), len(data)]
    for i, index in enumerate(indexes):
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValueError(f"cannot index slice/array with type {type(index).__name__}")
        if not 0 <= index <= len(data):
            raise ValueError(f"index out of range: {index}")
        idx[i] = index
    if idx[0] > idx[1]:
        raise ValueError(f"invalid slice index: {idx[0]} > {idx[1]}")
    if len(indexes) == 3 and idx[1] > idx[2]:
        raise ValueError(f"invalid slice index: {idx[1]} > {idx[2]}")
    out = data[idx[0]:idx[1]]
    return out.decode(errors="replace") if isinstance(item, str) else list(out)


def _sprig_slice(lst: Any, *indices: Any) -> Any:
    """Sprig's slice (list.go mustSlice), which replaces Go's builtin from v0.18: lists only, nil when empty."""
    if not isinstance(lst, list | tuple):
        raise ValueError(f"list should be type of slice or array but {_go_kind(lst)}")
    if not lst:
        return None
    start = _to_int(indices[0]) if indices else 0
    end = _to_int(indices[1]) if len(indices) > 1 else len(lst)
    if not 0 <= start <= end <= len(lst):
        raise ValueError("reflect: slice index out of range")
    return list(lst[start:end])


def _eval_args(args: tuple[Any, ...]) -> str:
    """funcs.go evalArgs: one string argument as is, else fmt.Sprint of them all."""
    return args[0] if len(args) == 1 and isinstance(args[0], str) else _print(*args)


_HTML_ESCAPES = {"\0": "\uFFFD", '"': "&#34;", "'": "&#39;", "&": "&amp;", "<": "&lt;", ">": "&gt;"}
_JS_ESCAPES = {"\\": "\\\\", "'": "\\'", '"': '\\"', "<": "\\u003C", ">": "\\u003E", "&": "\\u0026",
               "=": "\\u003D"}


def _html(*args: Any) -> str:
    """HTMLEscapeString."""
    return "".join(_HTML_ESCAPES.get(c, c) for c in _eval_args(args))


def _js(*args: Any) -> str:
    """JSEscapeString: quotes, backslash, <>&= escaped; control and non-printable runes as \\uXXXX."""
    out = []
    for c in _eval_args(args):
        if c in _JS_ESCAPES:
            out.append(_JS_ESCAPES[c])
        elif c < " " or (c >= "\x80" and not c.isprintable()):
            out.append(f"\\u{ord(c):04X}")
        else:
            out.append(c)
    return "".join(out)


def _urlquery(*args: Any) -> str:
    """url.QueryEscape."""
    from urllib.parse import quote_plus

    return quote_plus(_eval_args(args), safe="")


def _call(fn: Any, *_args: Any) -> Any:
    """funcs.go call: NFD's template data holds no functions, so every call is of a non-function."""
    raise ValueError("call of nil" if fn is None or fn is NO_VALUE else f"non-function of type {_go_kind(fn)}")


GO_BUILTINS: dict[str, Callable[..., Any]] = {
    "slice": _slice,
    "html": _html,
    "js": _js,
    "urlquery": _urlquery,
    "call": _call,
    "and": lambda *a: a[-1],  # short-circuit handled by the executor
    "or": lambda *a: a[-1],
    "not": lambda a: not truth(a),
    "len": _len,
    "index": _index,
    "print": _print,
    "printf": _printf,
    "println": lambda *a: _joined([go_format(x) for x in a], " ", "println") + "\n",
    "eq": _eq,
    "ne": lambda a, b: not _eq(a, b),
    "lt": _cmp(lambda a, b: a < b),
    "le": _cmp(lambda a, b: a <= b),
    "gt": _cmp(lambda a, b: a > b),
    "ge": _cmp(lambda a, b: a >= b),
}


def _i64(x: int) -> int:
    """Go int64 arithmetic wraps around (Sprig's add/mul/... use int64)."""
    return (x + (1 << 63)) % (1 << 64) - (1 << 63)


def _to_int(v: Any) -> int:
    """Sprig toInt = cast.ToInt: ints as they are, floats truncated, strings by strconv.ParseInt(s, 0, 0)
    after trimZeroDecimal; anything unparsable is 0."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return _i64(v)
    if isinstance(v, float):
        try:
            return _i64(int(v))
        except (ValueError, OverflowError):  # nan, inf
            return 0
    if isinstance(v, str):
        return go_parse_int_base0(trim_zero_decimal(v)) or 0
    return 0


def _is_separator(c: str) -> bool:
    """strings.go isSeparator (for Title)."""
    if c <= "\x7f":
        return not (c.isascii() and (c.isalnum() or c == "_"))
    return not c.isalnum() and c.isspace()


def _go_title(s: str) -> str:
    """strings.Title: the first letter of each word upper-cased, the rest left as it is."""
    out, prev = [], " "
    for c in s:
        out.append(c.upper() if _is_separator(prev) and len(c.upper()) == 1 else c)
        prev = c
    return "".join(out)


def _repeat(n: Any, s: Any) -> str:
    text = go_format(s)
    count = _to_int(n)
    if count < 0:
        raise ValueError("strings: negative Repeat count")  # Go's strings.Repeat panics; template reports it
    charge_value(count * len(text), f"repeat {count}")
    return text * count


def _replace(old: Any, new: Any, s: Any) -> str:
    text, old, new = go_format(s), go_format(old), go_format(new)
    hits = len(text) + 1 if old == "" else text.count(old)
    charge_value(len(text) + hits * (len(new) - len(old)), "replace")
    return text.replace(old, new)


def _mul(*a: Any) -> int:
    out = 1
    for x in a:
        out = _i64(out * _to_int(x))  # wrap at each step, as int64 does, so it never grows
    return out


def _default(d: Any, *given: Any) -> Any:
    v = given[0] if given else None
    return v if truth(v) else d


def _str_arg(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"wrong type for value; expected string; got {_basic(v)[0] if v is not None else 'nil'}")
    return v


def _int_arg(v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"wrong type for value; expected int; got {type(v).__name__}")
    return v


def _must_compile(pattern: Any) -> Regexp:
    """regexp.MustCompile as Sprig's non-`must` functions call it: its panic becomes the call's error."""
    p = _str_arg(pattern)
    try:
        return compile_regexp(p)
    except RegexpError as exc:
        shown = f"`{p}`" if "`" not in p and all(c == "\t" or c >= " " for c in p) else goq(p)
        raise ValueError(f"regexp: Compile({shown}): {exc}") from None


def _regex_match(pattern: Any, s: Any) -> bool:
    try:  # sprig regexMatch ignores the compile error: an invalid pattern is just false
        return compile_regexp(_str_arg(pattern)).match_string(_str_arg(s))
    except RegexpError:
        return False


def _compiled(pattern: Any) -> Regexp:
    return compile_regexp(_str_arg(pattern))


# Sprig v3 regex.go: every regexp is Go's (RE2), via console.nfd.regex; `must` forms return the compile error,
# the others panic in regexp.MustCompile (text/template reports the panic as the call's error).
REGEX_FUNCS: dict[str, Callable[..., Any]] = {
    "regexMatch": _regex_match,
    "mustRegexMatch": lambda p, s: _compiled(p).match_string(_str_arg(s)),
    "regexFind": lambda p, s: _must_compile(p).find_string(_str_arg(s)),
    "mustRegexFind": lambda p, s: _compiled(p).find_string(_str_arg(s)),
    "regexFindAll": lambda p, s, n: _must_compile(p).find_all_string(_str_arg(s), _int_arg(n)),
    "mustRegexFindAll": lambda p, s, n: _compiled(p).find_all_string(_str_arg(s), _int_arg(n)),
    "regexReplaceAll": lambda p, s, r: _must_compile(p).replace_all_string(_str_arg(s), _str_arg(r)),
    "mustRegexReplaceAll": lambda p, s, r: _compiled(p).replace_all_string(_str_arg(s), _str_arg(r)),
    "regexReplaceAllLiteral": lambda p, s, r: _must_compile(p).replace_all_literal_string(_str_arg(s), _str_arg(r)),
    "mustRegexReplaceAllLiteral": lambda p, s, r: _compiled(p).replace_all_literal_string(_str_arg(s), _str_arg(r)),
    "regexSplit": lambda p, s, n: _must_compile(p).split(_str_arg(s), _int_arg(n)),
    "mustRegexSplit": lambda p, s, n: _compiled(p).split(_str_arg(s), _int_arg(n)),
    "regexQuoteMeta": lambda s: quote_meta(_str_arg(s)),
}


SPRIG: dict[str, Callable[..., Any]] = {
    "lower": lambda s: go_format(s).lower(),
    "upper": lambda s: go_format(s).upper(),
    "title": lambda s: _go_title(go_format(s)),
    "trim": lambda s: go_format(s).strip(),
    "trimAll": lambda c, s: go_format(s).strip(c),
    "trimPrefix": lambda p, s: go_format(s).removeprefix(p),
    "trimSuffix": lambda p, s: go_format(s).removesuffix(p),
    "replace": _replace,
    "contains": lambda sub, s: sub in go_format(s),
    "hasPrefix": lambda p, s: go_format(s).startswith(p),
    "hasSuffix": lambda p, s: go_format(s).endswith(p),
    "repeat": _repeat,
    "trunc": lambda n, s: go_format(s)[:n] if n >= 0 else go_format(s)[n:],
    "quote": lambda *a: _joined([go_quote(go_format(x)) for x in a if x is not None], " ", "quote"),
    "squote": lambda *a: _joined(["'" + go_format(x) + "'" for x in a], " ", "squote"),
    "toString": go_format,
    "default": _default,
    "empty": lambda v: not truth(v),
    "coalesce": lambda *a: next((x for x in a if truth(x)), None),
    "ternary": lambda t, f, c: t if truth(c) else f,
    "atoi": lambda s: go_atoi(_str_arg(s)) or 0,  # strconv.Atoi, the error ignored
    "int": _to_int,
    "int64": _to_int,
    "add": lambda *a: _i64(sum(_to_int(x) for x in a)),
    "add1": lambda a: _i64(_to_int(a) + 1),
    "sub": lambda a, b: _i64(_to_int(a) - _to_int(b)),
    "mul": _mul,
    "div": lambda a, b: _to_int(a) // _to_int(b),
    "mod": lambda a, b: _to_int(a) % _to_int(b),
    "max": lambda *a: max(_to_int(x) for x in a),
    "min": lambda *a: min(_to_int(x) for x in a),
    "list": lambda *a: list(a),
    "first": lambda lst: lst[0] if lst else None,
    "last": lambda lst: lst[-1] if lst else None,
    "join": _join,
    "split": lambda sep, s: {f"_{i}": p for i, p in enumerate(go_format(s).split(sep))},
    "splitList": lambda sep, s: go_format(s).split(sep),
    "sortAlpha": lambda lst: sorted(_formatted_all(lst, "sortAlpha")),
    "uniq": lambda lst: list(dict.fromkeys(lst)),
    "has": lambda item, lst: any(_deep_equal(item, x, set()) for x in lst),
    "keys": lambda *ms: [k for m in ms for k in m],
    "hasKey": lambda m, k: k in m,
    "get": lambda m, k: m.get(k, ""),
    "slice": _sprig_slice,
    "dict": lambda *a: {go_format(a[i]): a[i + 1] if i + 1 < len(a) else "" for i in range(0, len(a), 2)},
    **REGEX_FUNCS,
}


# github:Masterminds/sprig v3.3.0 functions.go genericMap: every name NFD v0.18+ registers (v0.19 minus
# env, expandenv, getHostByName). The console implements the ones in SPRIG; a template calling another one
# parses as in NFD and fails when run, saying the console cannot evaluate it (never "not defined").
_SPRIG_WORDS = """
abbrev abbrevboth add add1 add1f addf adler32sum ago all any append atoi b32dec b32enc b64dec b64enc base bcrypt
biggest buildCustomCert camelcase cat ceil chunk clean coalesce compact concat contains date dateInZone dateModify
date_in_zone date_modify decryptAES deepCopy deepEqual default derivePassword dict dig dir div divf duration
durationRound empty encryptAES env expandenv ext fail first float64 floor fromJson genCA genCAWithKey genPrivateKey
genSelfSignedCert genSelfSignedCertWithKey genSignedCert genSignedCertWithKey get getHostByName has hasKey hasPrefix
hasSuffix hello htmlDate htmlDateInZone htpasswd indent initial initials int int64 isAbs join kebabcase keys kindIs
kindOf last list lower max maxf merge mergeOverwrite min minf mod mul mulf mustAppend mustChunk mustCompact
mustDateModify mustDeepCopy mustFirst mustFromJson mustHas mustInitial mustLast mustMerge mustMergeOverwrite
mustPrepend mustRegexFind mustRegexFindAll mustRegexMatch mustRegexReplaceAll mustRegexReplaceAllLiteral
mustRegexSplit mustRest mustReverse mustSlice mustToDate mustToJson mustToPrettyJson mustToRawJson mustUniq
mustWithout must_date_modify nindent nospace now omit osBase osClean osDir osExt osIsAbs pick pluck plural prepend
quote randAlpha randAlphaNum randAscii randBytes randInt randNumeric regexFind regexFindAll regexMatch
regexQuoteMeta regexReplaceAll regexReplaceAllLiteral regexSplit repeat replace rest reverse round semver
semverCompare seq set sha1sum sha256sum sha512sum shuffle slice snakecase sortAlpha split splitList splitn squote
sub subf substr swapcase ternary title toDate toDecimal toJson toPrettyJson toRawJson toString toStrings trim
trimAll trimPrefix trimSuffix trimall trunc tuple typeIs typeIsLike typeOf uniq unixEpoch unset until untilStep
untitle upper urlJoin urlParse uuidv4 values without wrap wrapWith
"""
SPRIG_NAMES = frozenset(_SPRIG_WORDS.split())
_HOST_FUNCS = frozenset({"env", "expandenv", "getHostByName"})


def _not_previewable(name: str) -> Callable[..., Any]:
    def fn(*_args: Any) -> Any:
        if name in _HOST_FUNCS:
            raise TemplateError(f"{name} reads nfd-master's environment (its process or DNS), which the console "
                                "cannot see: this preview cannot evaluate the rule")
        raise TemplateError(f"Sprig's {name} is not implemented by the console: this preview cannot evaluate "
                            "the rule (NFD would run it)")
    return fn
