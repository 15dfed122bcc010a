"""Bounded YAML/JSON loading for everything the console reads from users.

Rule files, NodeFeature files, the editors' buffers: each is read with a size cap (never whole when it
is too big, standard input included; a FIFO or a device named as a file is refused before it is opened),
parsed with PyYAML's own scanner/composer (libyaml when available), and the composed node graph is checked
before any Python object is built:

- size: `MAX_BYTES` = 1.5 MiB, etcd's default request limit (etcd `embed.DefaultMaxRequestBytes`,
  https://etcd.io/docs/v3.5/dev-guide/limit/): a NodeFeatureRule or NodeFeature bigger than that cannot be
  stored by any API server, so the console has no reason to read more;
- aliases: the expansion rule of Go's gopkg.in/yaml.v3 (decode.go `allowedAliasRatio`), which
  Kubernetes' sigs.k8s.io/yaml uses: once a document expands to more than 1000 nodes with more than 100
  of them from aliases, at most 99% may come from aliases below 400,000 nodes, sliding to 10% at
  4,000,000 ("document contains excessive aliasing"); the 762-byte billion-laughs document fails here;
  an alias to its own ancestor (a recursive document) is refused as well (yaml.v3: "anchor ... value
  contains itself");
- depth: `MAX_DEPTH` = 100 levels. Go's decoders stop at 10,000 (encoding/json `maxNestingDepth`,
  yaml.v3 `max_flow_level`), sized for Go's growable stacks; the console's consumers are Python and
  recursive (validation, templates, json.dumps) under a 1000-frame limit, and a NodeFeatureRule is about
  8 levels deep, so 100 never bites a real object and keeps every consumer far from RecursionError.

Errors are `InputError` (a ValueError) naming the source and the limit.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any

import yaml

MAX_BYTES = 1536 * 1024  # etcd --max-request-bytes default (1.5 MiB)
MAX_DEPTH = 100
# gopkg.in/yaml.v3 decode.go
_ALIAS_RATIO_LOW = 400_000
_ALIAS_RATIO_HIGH = 4_000_000


class InputError(ValueError):
    """A user's file or buffer that cannot be loaded: too big, too deep, too many aliases, or not YAML/JSON."""

    def __init__(self, source: str, message: str) -> None:
        super().__init__(f"{source}: {message}")
        self.source = source


@dataclass(frozen=True)
class Limits:
    max_bytes: int = MAX_BYTES
    max_depth: int = MAX_DEPTH
    why: str = "etcd's default request limit for one API object"  # what the size limit stands for, in messages


DEFAULT = Limits()


def _mib(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MiB"
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} bytes"


def read_capped(path: str | os.PathLike[str], limits: Limits = DEFAULT) -> bytes:
    """The file's bytes, refusing (without reading it all) anything over `limits.max_bytes`; `-` is standard
    input. Anything but a regular file (a FIFO, a device, a socket) is refused before it is opened
    (console/userfile.py): reading one would wait for a writer, for ever."""
    from console.userfile import NotRegularFile, open_regular

    source = os.fspath(path)
    cap = limits.max_bytes
    try:
        if source == "-":
            data = sys.stdin.buffer.read(cap + 1)  # a pipe has no size: read one byte past the cap at most
        else:
            with open_regular(source) as f:
                size = os.fstat(f.fileno()).st_size
                if size > cap:
                    raise InputError(source, f"file is {_mib(size)} ({size} bytes), over the {_mib(cap)} limit "
                                     f"({limits.why})")
                data = f.read(cap + 1)  # the file may grow after the stat
    except IsADirectoryError:
        raise InputError(source, "is a directory, not a file") from None
    except NotRegularFile as exc:
        raise InputError(source, f"{exc.strerror}: give a regular file, or - for standard input") from None
    except OSError as exc:
        raise InputError(source, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > cap:
        raise InputError(source, f"input is over the {_mib(cap)} limit ({limits.why}); only the first bytes were "
                         "read")
    return data


def _decode(data: bytes | str, source: str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(source, f"not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 1]!r})") from None


# ---------------------------------------------------------------- YAML

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):
    """SafeLoader whose values are what Kubernetes' YAML-to-JSON conversion gives: JSON types only."""


def _as_string(loader: Any, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


def _set_as_map(loader: Any, node: yaml.MappingNode) -> dict[Any, None]:
    return {loader.construct_object(k): None for k, _ in node.value}


# sigs.k8s.io/yaml decodes into interface{}: a timestamp stays the string written; a !!set is a map of nulls
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _as_string)
_Loader.add_constructor("tag:yaml.org,2002:set", _set_as_map)
_Loader.add_constructor("tag:yaml.org,2002:binary", _as_string)


def allowed_alias_ratio(decode_count: int) -> float:
    """gopkg.in/yaml.v3 decode.go allowedAliasRatio."""
    if decode_count <= _ALIAS_RATIO_LOW:
        return 0.99
    if decode_count >= _ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * ((decode_count - _ALIAS_RATIO_LOW) / (_ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for kv in node.value for n in kv]
    return []


def check_node(root: yaml.Node, source: str, limits: Limits = DEFAULT) -> None:
    """Refuse a composed document that nests too deep, contains itself, or expands aliases too much.

    Iterative post-order walk with memoised (expanded size, height) per node, so a shared (aliased) node
    costs once however often it is referenced; the expanded counts are what a decoder would build.
    """
    memo: dict[int, tuple[int, int]] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        nid = id(node)
        kids = _children(node)
        if done:
            size, height = 1, 0
            for k in kids:
                s, h = memo[id(k)]
                size += s
                height = max(height, h)
            height += 1
            memo[nid] = (size, height)
            open_.discard(nid)
            if height > limits.max_depth:
                _depth_error(source, node, limits)
            continue
        if nid in memo:
            continue
        open_.add(nid)
        stack.append((node, True))
        if len(open_) > limits.max_depth:
            _depth_error(source, node, limits)
        for k in kids:
            kid = id(k)
            if kid in open_:
                mark = k.start_mark
                raise InputError(source, f"line {mark.line + 1}: an alias refers to a node that contains it "
                                 "(a recursive document cannot be an API object)")
            if kid not in memo:
                stack.append((k, False))
    total = memo[id(root)][0]
    aliased = total - len(memo)
    if aliased > 100 and total > 1000 and aliased / total > allowed_alias_ratio(total):
        raise InputError(source, f"document contains excessive aliasing: aliases expand it to {total} nodes from "
                         f"{len(memo)} written (limit: yaml.v3's alias ratio, {allowed_alias_ratio(total):.0%} "
                         "of the nodes)")


def _depth_error(source: str, node: yaml.Node, limits: Limits) -> None:
    mark = node.start_mark
    raise InputError(source, f"line {mark.line + 1}: nesting deeper than {limits.max_depth} levels (limit "
                     f"{limits.max_depth})")


def _yaml_error(source: str, exc: yaml.YAMLError) -> InputError:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc)
    if "nesting depth" in str(problem) or "flow level" in str(getattr(exc, "context", "") or ""):
        return InputError(source, f"{where}nesting deeper than {MAX_DEPTH} levels (limit {MAX_DEPTH})")
    return InputError(source, f"invalid YAML: {where}{problem}")


def load_yaml_all(data: bytes | str, source: str = "<input>", limits: Limits = DEFAULT) -> list[Any]:
    """Every document of a YAML stream, each checked before it is built (see the module docstring)."""
    if len(data) > limits.max_bytes:
        raise InputError(source, f"input is {_mib(len(data))}, over the {_mib(limits.max_bytes)} limit "
                         f"({limits.why})")
    text = _decode(data, source)
    loader = _Loader(text)
    docs: list[Any] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            check_node(node, source, limits)
            docs.append(loader.construct_document(node))
    except yaml.YAMLError as exc:
        raise _yaml_error(source, exc) from None
    except RecursionError:  # the pure-Python composer recurses per level
        raise InputError(source, f"nesting deeper than {limits.max_depth} levels (limit {limits.max_depth})") \
            from None
    except (ValueError, TypeError, OverflowError) as exc:  # a scalar PyYAML cannot build (e.g. a 5000-digit int)
        if isinstance(exc, InputError):
            raise
        raise InputError(source, f"invalid YAML value: {exc}") from None
    finally:
        loader.dispose()
    return docs


def load_yaml(data: bytes | str, source: str = "<input>", limits: Limits = DEFAULT) -> Any:
    """One YAML document (None when empty); a stream of several is an error, as for yaml.safe_load."""
    docs = load_yaml_all(data, source, limits)
    if len(docs) > 1:
        raise InputError(source, f"expected one YAML document, found {len(docs)}")
    return docs[0] if docs else None


def load_yaml_file_all(path: str | os.PathLike[str], limits: Limits = DEFAULT) -> list[Any]:
    return load_yaml_all(read_capped(path, limits), os.fspath(path), limits)


# ---------------------------------------------------------------- JSON

def depth_of(value: Any, limit: int) -> int:
    """Nesting depth of a JSON-like value, without recursion; stops counting past `limit`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d)
            if deepest > limit:
                return deepest
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def load_json(data: bytes | str, source: str = "<input>", limits: Limits = DEFAULT) -> Any:
    """json.loads with the size cap and the depth limit (Python's decoder raises RecursionError near 1000)."""
    if len(data) > limits.max_bytes:
        raise InputError(source, f"input is {_mib(len(data))}, over the {_mib(limits.max_bytes)} limit")
    text = _decode(data, source)
    try:
        value = json.loads(text)
    except RecursionError:
        raise InputError(source, f"nesting deeper than {limits.max_depth} levels (limit {limits.max_depth})") \
            from None
    except ValueError as exc:
        raise InputError(source, f"invalid JSON: {exc}") from None
    if depth_of(value, limits.max_depth) > limits.max_depth:
        raise InputError(source, f"nesting deeper than {limits.max_depth} levels (limit {limits.max_depth})")
    return value
