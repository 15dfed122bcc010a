"""Go's integer parsing as NFD and Sprig use it (github:golang/go src/strconv/atoi.go; github:spf13/cast ToIntE)."""

from __future__ import annotations

import re

_INT64 = (-(2**63), 2**63 - 1)
_ATOI_RE = re.compile(r"[+-]?[0-9]+")
_BASE0_RE = re.compile(r"([+-]?)(0[xX]_?[0-9a-fA-F]+(?:_[0-9a-fA-F]+)*|0[oO]_?[0-7]+(?:_[0-7]+)*"
                       r"|0[bB]_?[01]+(?:_[01]+)*|0_?[0-7]+(?:_[0-7]+)*|[1-9][0-9]*(?:_[0-9]+)*|0)")


def _in_range(n: int) -> int | None:
    return n if _INT64[0] <= n <= _INT64[1] else None


def go_atoi(s: str) -> int | None:
    """strconv.Atoi: optional sign, ASCII decimal digits, int64 range; None where Go returns an error."""
    return _in_range(int(s)) if isinstance(s, str) and _ATOI_RE.fullmatch(s) else None


def go_parse_int_base0(s: str) -> int | None:
    """strconv.ParseInt(s, 0, 64): 0x/0o/0b prefixes, a leading 0 is octal, underscores between digits."""
    m = _BASE0_RE.fullmatch(s) if isinstance(s, str) else None
    if not m:
        return None
    sign, body = m.groups()
    digits = body.replace("_", "")
    octal = len(digits) > 1 and digits[0] == "0" and digits[1] not in "xXoObB"
    n = int(digits[1:], 8) if octal else int(digits, 0)
    return _in_range(-n if sign == "-" else n)


def trim_zero_decimal(s: str) -> str:
    """cast's trimZeroDecimal: "5.00" -> "5" (only zeros after the point; "5." stays)."""
    found_zero = False
    for i in range(len(s), 0, -1):
        c = s[i - 1]
        if c == ".":
            if found_zero:
                return s[:i - 1]
        elif c == "0":
            found_zero = True
        else:
            return s
    return s


_QUOTE_ESC = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
              '"': '\\"', "\\": "\\\\"}


def go_quote(s: str) -> str:
    """strconv.Quote (fmt %q of a string): Go escapes, non-printable runes as \\x, \\u or \\U (lower-case hex)."""
    out = ['"']
    for c in s:
        if c in _QUOTE_ESC:
            out.append(_QUOTE_ESC[c])
        elif c.isprintable() or c == " ":
            out.append(c)
        elif ord(c) < 0x80:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) < 0x10000:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    out.append('"')
    return "".join(out)
