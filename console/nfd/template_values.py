"""Template values as Go's fmt and text/template see them: <no value>, truth, fmt.Sprint (bounded)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from console.nfd.budget import BudgetExceeded, current_budget


class _Missing:
    """Go's <no value>."""

    def __repr__(self) -> str:
        return "<no value>"


NO_VALUE = _Missing()


class TemplateError(Exception):
    """Parse or execution error, formatted like Go's text/template (console.nfd.templates' error)."""


class GoMap(dict):
    """A Go map with a concrete element type: NFD's MatchedElement, map[string]string.

    `index` of a missing key gives the element type's zero value (`zero`), not <no value> as for a
    map[string]interface{} (text/template funcs.go index: reflect.Zero of the element type). Field access
    (.key) still fails with missingkey=error. Class attributes only: these are built per rule and node.
    """

    zero: Any = ""


class DomainFeatures(GoMap):
    """domainMatchedFeatures: map[string][]MatchedElement (a missing feature: a nil slice, printed [])."""

    zero: Any = ()


class MatchedFeatures(GoMap):
    """matchedFeatures: map[string]domainMatchedFeatures (a missing domain: a nil map, printed map[])."""

    zero: Any = DomainFeatures()


def matched_features_map() -> MatchedFeatures:
    return MatchedFeatures()


def go_format(v: Any) -> str:
    """fmt.Sprint of a template value; a collection's text is bounded by the template output budget.

    (Values can share structure: `$x = list $x $x` thirty times is small in memory but 2^30 elements as text.)
    """
    if isinstance(v, str):
        return v
    if not isinstance(v, Mapping | Sequence):
        return _scalar_text(v)
    limit = current_budget().max_output
    if _text_size(v, {}) > limit:  # measured first, shared parts once: refused without building anything
        raise BudgetExceeded(f"formatting a value would produce more than the template output budget of {limit} "
                             "bytes")
    parts: list[str] = []
    left = [limit]

    def emit(text: str) -> None:
        left[0] -= len(text)
        if left[0] < 0:
            raise BudgetExceeded(f"formatting a value would produce more than the template output budget of {limit} "
                                 "bytes")
        parts.append(text)

    def walk(x: Any) -> None:
        if isinstance(x, str) or not isinstance(x, Mapping | Sequence):
            emit(x if isinstance(x, str) else _scalar_text(x))
        elif isinstance(x, Mapping):
            emit("map[")
            for i, k in enumerate(sorted_keys(x)):
                emit(f"{' ' if i else ''}{k}:")
                walk(x[k])
            emit("]")
        else:
            emit("[")
            for i, e in enumerate(x):
                if i:
                    emit(" ")
                walk(e)
            emit("]")

    walk(v)
    return "".join(parts)


def _text_size(v: Any, memo: dict[int, int]) -> int:
    """len(go_format(v)), computed once per distinct collection (values may share structure)."""
    if isinstance(v, str):
        return len(v)
    if not isinstance(v, Mapping | Sequence):
        return len(_scalar_text(v))
    hit = memo.get(id(v))
    if hit is not None:
        return hit
    if isinstance(v, Mapping):
        n = 5 + sum(len(str(k)) + 1 + _text_size(x, memo) for k, x in v.items()) + max(len(v) - 1, 0)
    else:
        n = 2 + sum(_text_size(x, memo) for x in v) + max(len(v) - 1, 0)
    memo[id(v)] = n
    return n


def _scalar_text(v: Any) -> str:
    if v is None or v is NO_VALUE:
        return "<no value>" if v is NO_VALUE else "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):  # fmt: NaN, +Inf, -Inf
            return "NaN" if v != v else ("+Inf" if v > 0 else "-Inf")
        return repr(v).replace("e+", "e+").rstrip("0").rstrip(".") if v != int(v) else str(int(v))
    return str(v)


def truth(v: Any) -> bool:
    if v is None or v is NO_VALUE:
        return False
    if isinstance(v, bool):
        return v
    if isinstance(v, int | float | str | Mapping | Sequence):
        return bool(v)
    return True


def sorted_keys(m: Mapping[Any, Any]) -> list[Any]:
    """Go ranges over a map in key order; keys of mixed types (only from YAML) sort by their text."""
    try:
        return sorted(m)
    except TypeError:
        return sorted(m, key=go_format)


__all__ = ["NO_VALUE", "go_format", "sorted_keys", "truth"]
