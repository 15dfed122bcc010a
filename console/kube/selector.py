"""Kubernetes label selectors (the `-l` syntax kubectl takes), parsed once and matched in memory.

Grammar: requirements separated by commas — `key`, `!key`, `key=value`, `key==value`,
`key!=value`, `key in (a,b)`, `key notin (a,b)`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_SET_RE = re.compile(r"^\s*([^\s!=(),]+)\s+(in|notin)\s*\(([^)]*)\)\s*$")


class SelectorError(ValueError):
    """An unparsable selector; the message points at the bad requirement."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # exists | !exists | = | != | in | notin
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!exists":
            return self.key not in labels
        value = labels.get(self.key)
        if self.op in ("=", "in"):
            return value is not None and value in self.values
        # != and notin also match nodes without the key, as in Kubernetes
        return value is None or value not in self.values


@dataclass(frozen=True)
class Selector:
    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)


def _split(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def parse_selector(text: str) -> Selector:
    reqs: list[Requirement] = []
    for raw in _split(text):
        part = raw.strip()
        if not part:
            if text.strip():
                raise SelectorError(f"empty requirement in {text!r}")
            continue
        m = _SET_RE.match(part)
        if m:
            values = tuple(v.strip() for v in m.group(3).split(",") if v.strip())
            if not values:
                raise SelectorError(f"{part!r}: `{m.group(2)}` needs at least one value")
            reqs.append(Requirement(m.group(1), m.group(2), values))
            continue
        for op in ("!=", "==", "="):
            if op in part:
                key, _, value = part.partition(op)
                key, value = key.strip(), value.strip()
                if not key or " " in key or " " in value or "=" in value:
                    raise SelectorError(f"{part!r}: expected key{op}value")
                reqs.append(Requirement(key, "!=" if op == "!=" else "=", (value,)))
                break
        else:
            neg = part.startswith("!")
            key = part[1:].strip() if neg else part
            if not key or any(c in key for c in " ()!"):
                raise SelectorError(f"{part!r}: expected key, !key, key=value, key!=value or key in (a,b)")
            reqs.append(Requirement(key, "!exists" if neg else "exists"))
    return Selector(tuple(reqs))
