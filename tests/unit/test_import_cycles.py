"""No import cycles in console/ (issue 12): every import counts, at module level, inside a function (the way
cycles hide) or under TYPE_CHECKING, as grimp, the graph import-linter checks its contracts on, records them.

A cycle is a strongly connected component of more than one module (Tarjan's algorithm); the failure names each
one with the import lines that close it.
"""

from __future__ import annotations

import sys

import grimp


def _components(graph: grimp.ImportGraph) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for module in sorted(graph.modules):
            if module not in index:
                visit(module)
    finally:
        sys.setrecursionlimit(limit)
    return out


def _describe(graph: grimp.ImportGraph, component: list[str]) -> str:
    lines = [" <-> ".join(component)]
    for a in component:
        for b in component:
            if a != b:
                lines += [f"    {a}:{d['line_number']}: {d['line_contents']}"
                          for d in graph.get_import_details(importer=a, imported=b)]
    return "\n".join(lines)


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for m in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(m)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.c", imported="p.a")
    assert _components(graph) == [["p.a", "p.b"]]


def test_console_has_no_import_cycles() -> None:
    graph = grimp.build_graph("console", cache_dir=None, exclude_type_checking_imports=False)
    cycles = _components(graph)
    assert not cycles, "import cycles:\n" + "\n".join(_describe(graph, c) for c in cycles)
