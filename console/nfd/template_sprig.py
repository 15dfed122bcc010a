"""More of Sprig (github:Masterminds/sprig v3.3.0, the version NFD v0.18+ vendors): strings, hashes, lists.

Each function follows its Sprig source (strings.go, crypto.go, list.go, numeric.go, functions.go); the
typed parameters of the Go signatures are checked as text/template checks them (wrong type: an error).
`function_map` puts them together with Go's builtins and the rest of Sprig (template_funcs.py) for a template.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import zlib
from collections.abc import Callable
from typing import Any

from console.nfd.template_funcs import (
    _HOST_FUNCS,
    GO_BUILTINS,
    SPRIG,
    SPRIG_NAMES,
    _deep_equal,
    _go_kind,
    _int_arg,
    _not_previewable,
    _str_arg,
    _to_int,
)
from console.nfd.template_values import go_format, truth


def _substr(start: Any, end: Any, s: Any) -> str:
    """strings.go substring: byte offsets; a negative start means from 0, a negative or too big end means to the end."""
    i, j, b = _int_arg(start), _int_arg(end), _str_arg(s).encode()
    if i < 0:
        if j < 0 or j > len(b):
            raise ValueError(f"runtime error: slice bounds out of range [:{j}] with length {len(b)}")
        out = b[:j]
    elif j < 0 or j > len(b):
        if i > len(b):
            raise ValueError(f"runtime error: slice bounds out of range [{i}:{len(b)}]")
        out = b[i:]
    else:
        if i > j:
            raise ValueError(f"runtime error: slice bounds out of range [{i}:{j}]")
        out = b[i:j]
    return out.decode(errors="replace")


def _nospace(s: Any) -> str:
    """goutils DeleteWhiteSpace: drop every unicode.IsSpace rune."""
    return "".join(c for c in _str_arg(s) if not c.isspace())


def _cat(*v: Any) -> str:
    """strings.go cat: nil elements dropped, the rest joined by one space (fmt %v)."""
    return " ".join(go_format(x) for x in v if x is not None)


def _indent(spaces: Any, v: Any) -> str:
    pad = " " * _int_arg(spaces)
    return pad + _str_arg(v).replace("\n", "\n" + pad)


def _plural(one: Any, many: Any, count: Any) -> str:
    return _str_arg(one) if _int_arg(count) == 1 else _str_arg(many)


def _hex_digest(name: str) -> Callable[[Any], str]:
    return lambda s: hashlib.new(name, _str_arg(s).encode()).hexdigest()


def _b64dec(s: Any) -> str:
    """strings.go base64decode: a decoding error is returned as the text of the error, not raised."""
    text = _str_arg(s)
    try:
        return base64.b64decode(text, validate=True).decode(errors="replace")
    except (binascii.Error, ValueError):
        return f"illegal base64 data at input byte {_bad_b64_offset(text)}"


def _bad_b64_offset(text: str) -> int:
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    for i, c in enumerate(text):
        if c not in alphabet and c != "=":
            return i
    return len(text) - len(text) % 4 if len(text) % 4 else max(len(text) - 4, 0)


def _b32dec(s: Any) -> str:
    try:
        return base64.b32decode(_str_arg(s)).decode(errors="replace")
    except (binascii.Error, ValueError) as exc:
        return f"illegal base32 data ({exc})"


def _list(v: Any, what: str) -> list[Any]:
    if not isinstance(v, list | tuple):
        raise ValueError(f"Cannot {what} type {_go_kind(v)}" if what.startswith("concat") else
                         f"Cannot find {what} on type {_go_kind(v)}")
    return list(v)


def _rest(v: Any) -> Any:
    lst = _list(v, "rest")
    return lst[1:] if lst else None


def _initial(v: Any) -> Any:
    lst = _list(v, "initial")
    return lst[:-1] if lst else None


def _reverse(v: Any) -> list[Any]:
    return _list(v, "reverse")[::-1]


def _push(v: Any, item: Any) -> list[Any]:
    if not isinstance(v, list | tuple):
        raise ValueError(f"Cannot push on type {_go_kind(v)}")
    return [*v, item]


def _prepend(v: Any, item: Any) -> list[Any]:
    if not isinstance(v, list | tuple):
        raise ValueError(f"Cannot prepend on type {_go_kind(v)}")
    return [item, *v]


def _concat(*lists: Any) -> list[Any]:
    out: list[Any] = []
    for lst in lists:
        out.extend(_list(lst, "concat type as list"))
    return out


def _compact(v: Any) -> list[Any]:
    return [x for x in _list(v, "compact") if truth(x)]


def _without(v: Any, *omit: Any) -> list[Any]:
    return [x for x in _list(v, "without") if not any(_deep_equal(x, o, set()) for o in omit)]


def _to_strings(v: Any) -> list[str]:
    if isinstance(v, list | tuple):
        return [go_format(x) for x in v if x is not None]
    return [] if v is None else [go_format(v)]


def _until_step(start: Any, stop: Any, step: Any) -> list[int]:
    a, b, s = _int_arg(start), _int_arg(stop), _int_arg(step)
    if b < a:
        return list(range(a, b, s)) if s < 0 else []
    return list(range(a, b, s)) if s > 0 else []


def _fail(msg: Any) -> str:
    raise ValueError(_str_arg(msg))


def _untitle(s: Any) -> str:
    text = _str_arg(s)
    return text[:1].lower() + text[1:]


MORE_SPRIG: dict[str, Callable[..., Any]] = {
    "substr": _substr,
    "nospace": _nospace,
    "cat": _cat,
    "indent": _indent,
    "nindent": lambda n, v: "\n" + _indent(n, v),
    "plural": _plural,
    "sha1sum": _hex_digest("sha1"),
    "sha256sum": _hex_digest("sha256"),
    "sha512sum": _hex_digest("sha512"),
    "adler32sum": lambda s: str(zlib.adler32(_str_arg(s).encode())),
    "b64enc": lambda s: base64.b64encode(_str_arg(s).encode()).decode(),
    "b64dec": _b64dec,
    "b32enc": lambda s: base64.b32encode(_str_arg(s).encode()).decode(),
    "b32dec": _b32dec,
    "untitle": _untitle,
    "trimall": lambda a, b: _str_arg(b).strip(_str_arg(a)),
    "toStrings": _to_strings,
    "tuple": lambda *a: list(a),
    "rest": _rest,
    "initial": _initial,
    "reverse": _reverse,
    "append": _push,
    "push": _push,
    "prepend": _prepend,
    "concat": _concat,
    "compact": _compact,
    "without": _without,
    "until": lambda n: _until_step(0, n, 1 if _int_arg(n) >= 0 else -1),
    "untilStep": _until_step,
    "biggest": lambda *a: max(_to_int(x) for x in a),
    "all": lambda *a: all(truth(x) for x in a),
    "any": lambda *a: any(truth(x) for x in a),
    "deepEqual": lambda a, b: _deep_equal(a, b, set()),
    "fail": _fail,
}


def function_map(sprig: bool, host_funcs: bool = False) -> dict[str, Callable[..., Any]]:
    """Go's builtins, plus Sprig from v0.18 (`host_funcs`: env, expandenv, getHostByName, present in v0.18)."""
    funcs = dict(GO_BUILTINS)
    if sprig:
        for name in SPRIG_NAMES - (set() if host_funcs else _HOST_FUNCS):
            funcs[name] = _not_previewable(name)
        funcs.update(MORE_SPRIG)
        funcs.update(SPRIG)  # text/template looks up the template's Funcs before its builtins: Sprig's slice wins
    return funcs
