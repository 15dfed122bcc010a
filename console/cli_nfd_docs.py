"""NFD objects read from the files `console nfd` is given (-f/--rule, --nodefeature), shared by its subcommands
(cli_nfd.py, cli_nfd_deploy.py), which otherwise would import each other."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# validation issues on these fields are about the rule's output (what it would set), reported as notes in a dry run
OUTPUT_FIELDS = ("labels.", "annotations.", "extendedResources.", "taints[")


def load_docs(paths: list[str], kind: str) -> list[dict[str, Any]]:
    """The `kind` objects of the files (`-`: standard input); InputError (a ValueError) naming the file."""
    from console.bounded import InputError, load_yaml_file_all
    from console.nfd.rules import object_name

    docs: list[dict[str, Any]] = []
    for path in paths:
        loaded = load_yaml_file_all(path)  # InputError (a ValueError) names the file and the limit
        for doc in loaded:
            if doc is None:
                continue
            if isinstance(doc, Mapping) and doc.get("kind") == "List":
                items = doc.get("items") or []
                if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
                    raise InputError(path, f"a List's items must be {kind} mappings")
                docs.extend(dict(i) for i in items)
            elif isinstance(doc, Mapping):
                docs.append(dict(doc))
            else:
                raise InputError(path, f"expected {kind} mapping documents, got {_shape(doc)}")
    for doc in docs:
        if doc.get("kind") not in (None, kind):
            raise InputError(", ".join(paths), f"expected kind {kind}, got {doc.get('kind')!r} ({object_name(doc)})")
    if not docs:
        raise InputError(", ".join(paths), f"no {kind} documents")
    return docs


def _shape(doc: Any) -> str:
    """What a YAML document is, in words (not a Python class name)."""
    if isinstance(doc, list):
        return "a list"
    return "a string" if isinstance(doc, str) else "a number" if isinstance(doc, int | float) else "a scalar"
