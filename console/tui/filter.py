"""The `/` filter: text (case-insensitive substring), `!text` inverts, `-l SELECTOR` matches labels.

Pure: `parse_filter("worker -l feature.node.kubernetes.io/cpu-cpuid.AVX512F=true")`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from console.kube.selector import Selector, SelectorError, parse_selector

__all__ = ["Filter", "SelectorError", "parse_filter"]

_FLAG_RE = re.compile(r"(?:^|\s)(?:-l|--selector)(?:[\s=]|$)")


@dataclass(frozen=True)
class Filter:
    text: str = ""
    invert: bool = False
    selector: Selector | None = None

    @property
    def empty(self) -> bool:
        return not self.text and self.selector is None

    def matches(self, haystack: str, labels: Mapping[str, str]) -> bool:
        """`haystack` must already be lower case."""
        if self.selector is not None and not self.selector.matches(labels):
            return False
        if self.text:
            return (self.text in haystack) != self.invert
        return True


def parse_filter(expr: str) -> Filter:
    """Raises SelectorError for a bad `-l` selector."""
    expr = expr.strip()
    selector = None
    text = expr
    m = _FLAG_RE.search(expr)
    if m:
        text, tail = expr[: m.start()].strip(), expr[m.end():].strip()
        if not tail:
            raise SelectorError("-l needs a selector, e.g. -l feature.node.kubernetes.io/cpu-cpuid.AVX512F=true")
        selector = parse_selector(tail)
    invert = text.startswith("!")
    if invert:
        text = text[1:].strip()
    return Filter(text.lower(), invert and bool(text), selector)
