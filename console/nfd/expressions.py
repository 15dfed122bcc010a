"""Match expressions (pkg/apis/nfd/nodefeaturerule/expression.go), compiled once.

Semantics follow NFD exactly, including its quirks: value operators are false on flags and on
missing keys (NotIn too); Gt/Lt need base-10 integers (strconv.Atoi) and a non-integer input is an
*error* that aborts the whole rule; errors are only raised when an input value is actually compared.
Expressions of one set are evaluated in sorted key order (Go iterates a map in random order).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from console.nfd.regex import RegexpError, compile_regexp
from console.nfd.template_values import GoMap
from console.nfd.versions import NfdVersion, inclusive_ops_supported

BASE_OPS = ("In", "NotIn", "InRegexp", "Exists", "DoesNotExist", "Gt", "Lt", "GtLt", "IsTrue", "IsFalse")
INCLUSIVE_OPS = ("Ge", "Le", "GeLe")
ALL_OPS = ("", *BASE_OPS, *INCLUSIVE_OPS)  # "" = MatchAny: in code, rejected by the CRD enum


class EvaluationError(Exception):
    """NFD would fail the rule ("failed to process rule") with this message."""


def crd_ops(version: NfdVersion) -> tuple[str, ...]:
    """Operators the NodeFeatureRule CRD accepts in this version."""
    return BASE_OPS + (INCLUSIVE_OPS if inclusive_ops_supported(version) else ())


_ATOI_RE = re.compile(r"[+-]?[0-9]+")
_SEMVER_RE = re.compile(
    r"v?([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)
_INT64 = 2**63


_ATOI_CACHE: dict[str, int | None] = {}


def atoi(s: str) -> int | None:
    """Go strconv.Atoi: optional sign, ASCII digits, int64 range; None when it would fail."""
    try:
        return _ATOI_CACHE[s]
    except KeyError:
        pass
    n: int | None = None
    if _ATOI_RE.fullmatch(s):
        n = int(s)
        if not -_INT64 <= n < _INT64:
            n = None
    if len(_ATOI_CACHE) < 65536:
        _ATOI_CACHE[s] = n
    return n


def parse_semver(s: str) -> tuple[int, int, int] | None:
    """Masterminds semver.NewVersion with the pre-release part dropped (NFD's extractVersion)."""
    m = _SEMVER_RE.fullmatch(s)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0)


def goq(s: str) -> str:
    """Go's %q for messages."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _fmt_values(values: Sequence[str]) -> str:
    return "[" + " ".join(values) + "]"


class MatchExpression:
    """One `{op, value, type}`; `test(valid, value)` is the compiled evaluateMatchExpression."""

    __slots__ = ("op", "test", "type", "values")

    def __init__(self, op: str, values: tuple[str, ...] = (), type: str = "") -> None:
        self.op = op
        self.values = tuple(values)
        self.type = type
        self.test: Callable[[bool, str | None], bool] = _compile(self)

    def __repr__(self) -> str:
        return f"MatchExpression(op={self.op!r}, values={self.values!r}, type={self.type!r})"

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op}
        if self.values:
            out["value"] = list(self.values)
        if self.type:
            out["type"] = self.type
        return out

    @classmethod
    def from_api(cls, raw: Any, where: str = "") -> MatchExpression:
        """From `{op: In, value: [..], type: ..}`; raises ValueError on a wrong shape."""
        if not isinstance(raw, Mapping):
            raise ValueError(f"{where}: a match expression must be a mapping with 'op' (got {raw!r})")
        op = raw.get("op", "")
        if not isinstance(op, str):
            raise ValueError(f"{where}.op: must be a string (got {op!r})")
        vals = raw.get("value")
        if vals is None:
            vals = []
        if isinstance(vals, str | int | float | bool) or not isinstance(vals, Sequence):
            raise ValueError(f"{where}.value: must be a list of strings (got {vals!r})")
        typ = raw.get("type") or ""
        return cls(op, tuple(_go_str(v) for v in vals), str(typ))


def _go_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _compile(m: MatchExpression) -> Callable[[bool, str | None], bool]:
    op, vals, typ = m.op, m.values, m.type
    shown = _fmt_values(vals)

    def fail(msg: str) -> Callable[[bool, str | None], bool]:
        def t(valid: bool, value: str | None) -> bool:
            raise EvaluationError(msg)
        return t

    if op not in ALL_OPS:
        return fail(f"invalid Op {goq(op)}")
    if op in ("", "Exists", "DoesNotExist"):
        if vals:
            return fail(f"invalid expression, 'value' field must be empty for Op {goq(op)} (have {shown})")
        if op == "":
            return lambda valid, value: True
        if op == "Exists":
            return lambda valid, value: valid
        return lambda valid, value: not valid

    # Every other op only looks at (and only fails on) a present, non-nil value.
    def guarded(inner: Callable[[str], bool]) -> Callable[[bool, str | None], bool]:
        def t(valid: bool, value: str | None) -> bool:
            if valid and value is not None:
                return inner(value)
            return False
        return t

    if op in ("In", "NotIn", "InRegexp") and not vals:
        return guarded(_raise(f"invalid expression, 'value' field must be non-empty for Op {goq(op)}"))
    # Hot operators get flat closures (no extra call layer): the master runs them per node per rule.
    if op == "In":
        vs = frozenset(vals)
        return lambda valid, value: valid and value is not None and value in vs
    if op == "NotIn":
        vs = frozenset(vals)
        return lambda valid, value: valid and value is not None and value not in vs
    if op == "InRegexp":
        try:  # Go's regexp (RE2, linear time) and MatchString: unanchored, as nfd-master
            res = [compile_regexp(p) for p in vals]
        except RegexpError:
            return guarded(_raise(
                f"invalid expressiom, 'value' field must only contain valid regexps for Op {goq(op)} (have {shown})"))
        if len(res) == 1:
            match = res[0].match_string
            return lambda valid, value: valid and value is not None and match(value)
        return guarded(lambda v: any(r.match_string(v) for r in res))
    if op in ("IsTrue", "IsFalse"):
        if vals:
            return guarded(_raise(f"invalid expression, 'value' field must be empty for Op {goq(op)} (have {shown})"))
        want = "true" if op == "IsTrue" else "false"
        return lambda valid, value: valid and value == want
    if op in ("Gt", "Ge", "Lt", "Le"):
        if len(vals) != 1:
            return guarded(_raise(
                f"invalid expression, 'value' field must contain exactly one element for Op {goq(op)} (have {shown})"))
        return guarded(_compare1(op, vals[0], typ, m))
    # GtLt / GeLe
    if len(vals) != 2:
        return guarded(_raise(
            f"invalid expression, 'value' field must contain exactly two elements for Op {goq(op)} (have {shown})"))
    return guarded(_compare2(op, vals, typ, m))


def _type_error(op: str, typ: str) -> str:
    return f"invalid expression, 'type' field only accepts \"version\" value for Op {goq(op)} (have {goq(typ)})"


def _raise(msg: str) -> Callable[[str], bool]:
    def t(value: str) -> bool:
        raise EvaluationError(msg)
    return t


_CMP1 = {
    "Gt": lambda a, b: a > b, "Ge": lambda a, b: a >= b,
    "Lt": lambda a, b: a < b, "Le": lambda a, b: a <= b,
}


def _describe(m: MatchExpression) -> str:
    return f"&{{{m.op} {_fmt_values(m.values)} {m.type}}}" if m.type else f"&{{{m.op} {_fmt_values(m.values)}}}"


def _compare1(op: str, ref: str, typ: str, m: MatchExpression) -> Callable[[str], bool]:
    cmp = _CMP1[op]
    if typ == "version":
        r = parse_semver(ref)

        def tv(value: str) -> bool:
            lv = parse_semver(value)
            if lv is None:
                raise EvaluationError(f"not a version {goq(value)}")
            if r is None:
                raise EvaluationError(f"not a version {goq(ref)} in {_describe(m)}")
            return cmp(lv, r)
        return tv
    if typ:
        return _raise(_type_error(op, typ))
    ri = atoi(ref)

    def ti(value: str) -> bool:
        lv = atoi(value)
        if lv is None:
            raise EvaluationError(f"not a number {goq(value)}")
        if ri is None:
            raise EvaluationError(f"not a number {goq(ref)} in {_describe(m)}")
        return cmp(lv, ri)
    return ti


def _compare2(op: str, refs: tuple[str, ...], typ: str, m: MatchExpression) -> Callable[[str], bool]:
    inclusive = op == "GeLe"
    if typ == "version":
        lo, hi = parse_semver(refs[0]), parse_semver(refs[1])

        def tv(value: str) -> bool:
            v = parse_semver(value)
            if v is None:
                raise EvaluationError(f"not a version {goq(value)}")
            for raw, parsed in ((refs[0], lo), (refs[1], hi)):
                if parsed is None:
                    raise EvaluationError(f"not a version {goq(raw)} in {_describe(m)}")
            return (lo <= v <= hi) if inclusive else (lo < v < hi)  # type: ignore[operator]
        return tv
    if typ:
        return _raise(_type_error(op, typ))
    ilo, ihi = atoi(refs[0]), atoi(refs[1])

    def ti(value: str) -> bool:
        v = atoi(value)
        if v is None:
            raise EvaluationError(f"not a number {goq(value)}")
        for raw, parsed in ((refs[0], ilo), (refs[1], ihi)):
            if parsed is None:
                raise EvaluationError(f"not a number {goq(raw)} in {_describe(m)}")
        if ilo >= ihi:  # type: ignore[operator]
            raise EvaluationError(
                f"invalid expression, value[0] must be less than Value[1] for Op {goq(op)} (have {_fmt_values(refs)})")
        return (ilo <= v <= ihi) if inclusive else (ilo < v < ihi)  # type: ignore[operator]
    return ti


Element = GoMap  # map[string]string
ExpressionSet = list[tuple[str, MatchExpression]]  # sorted by key


def match_values(exprs: ExpressionSet, values: Mapping[str, str]) -> bool:
    """MatchValues with failFast: every expression must hold on this attribute map."""
    for name, e in exprs:
        v = values.get(name)
        if not e.test(v is not None, v):
            return False
    return True


def match_multi(exprs: ExpressionSet, keys: set[str] | None, values: Mapping[str, str] | None,
                instances: list[dict[str, str]] | None, want_elements: bool = True) -> tuple[bool, list[Element]]:
    """MatchMulti (failFast): flags and attributes as a union, then instances separately."""
    elems: list[Element] = []
    is_match = keys is not None or values is not None
    for name, e in exprs:
        mk = mv = False
        if keys is not None:
            mk = e.test(name in keys, None)
            if mk:
                elems.append(GoMap({"Name": name}))
            elif e.op == "DoesNotExist":
                is_match, elems = False, []
                break
        if values is not None:
            v = values.get(name)
            mv = e.test(v is not None, v)
            if mv:  # values[n]: a DoesNotExist name has Go's zero value ""
                elems.append(GoMap({"Name": name, "Value": "" if v is None else v}))
            elif e.op == "DoesNotExist":
                is_match, elems = False, []
                break
        if not mk and not mv:
            is_match, elems = False, []
            break
    elems.sort(key=lambda x: x["Name"])
    if instances:
        matched_inst = False
        for inst in instances:
            if match_values(exprs, inst):
                matched_inst = True
                if want_elements:
                    elems.append(GoMap(inst))
        is_match = is_match or matched_inst
    return is_match, elems


def match_multi_bool(exprs: ExpressionSet, keys: set[str] | None, values: Mapping[str, str] | None,
                     instances: list[dict[str, str]] | None) -> bool:
    """match_multi without building matched elements (rules without templates)."""
    ok = keys is not None or values is not None
    if ok:
        for name, e in exprs:
            test = e.test
            mk = mv = False
            if keys is not None:
                mk = test(name in keys, None)
                if not mk and e.op == "DoesNotExist":
                    ok = False
                    break
            if values is not None:
                v = values.get(name)
                mv = test(v is not None, v)
                if not mv and e.op == "DoesNotExist":
                    ok = False
                    break
            if not mk and not mv:
                ok = False
                break
    if instances:
        matched = False
        for inst in instances:  # all of them, as NFD does: a later instance may still raise an error
            if match_values(exprs, inst):
                matched = True
        ok = ok or matched
    return ok


def match_names_multi(e: MatchExpression, keys: set[str] | None, values: Mapping[str, str] | None,
                      instances: list[dict[str, str]] | None) -> tuple[bool, list[Element]]:
    """MatchNamesMulti: elements (or instances with an attribute) whose *name* matches."""
    ret: list[Element] = []
    for k in keys or ():
        if e.test(True, k):
            ret.append(GoMap({"Name": k}))
    for k, v in (values or {}).items():
        if e.test(True, k):
            ret.append(GoMap({"Name": k, "Value": v}))
    ret.sort(key=lambda x: x["Name"])
    for inst in instances or ():
        if any(e.test(True, k) for k in inst):
            ret.append(GoMap(inst))
    return bool(ret), ret
