"""Feature files (`features.d`) and hook output: the `local` source's parser, per NFD version.

v0.4-v0.9: raw lines, `<file>-<key>` names, leading `/` drops the prefix.
v0.10-v0.13: raw lines, keys exactly as written.
v0.14: trimmed lines, `#` comments, `# +expiry-time=`, 64 KiB file limit.
v0.15: `# +no-label`, `# +no-feature`, `local.feature`, dot-files ignored.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from console.nfd import versions as V
from console.userfile import open_regular

MAX_FEATURE_FILE_SIZE = 65536
# Before v0.14 NFD reads a feature file whole; the console stops at etcd's 1.5 MiB request limit, past which the
# labels could never be stored on a Node anyway (and a 100 MB file is never read into memory).
MAX_UNCAPPED_FILE_SIZE = 1536 * 1024
DIRECTIVE_PREFIX = "# +"
_RFC3339_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")


@dataclass
class ParsedLocal:
    """Keys parsed from one file or hook: `labels` feed `local.label`, `features` feed `local.feature`."""

    labels: dict[str, str] = field(default_factory=dict)
    features: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)  # keys skipped because their expiry passed


def decode(data: bytes | str) -> str:
    """Bytes as Go would see them; undecodable bytes become U+FFFD (and then fail label validation)."""
    return data if isinstance(data, str) else data.decode("utf-8", errors="replace")


def parse_rfc3339(text: str) -> datetime | None:
    """Go time.Parse(time.RFC3339, ...) or None."""
    t = text.strip()
    if not _RFC3339_RE.fullmatch(t):
        return None
    try:
        return datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        return None


def parse_feature_lines(data: bytes | str, file_name: str, version: V.NfdVersion | str | None = None,
                        now: datetime | None = None) -> ParsedLocal:
    """Parse a feature file's (or a hook's stdout's) content as that NFD version's local source would."""
    v = V.parse_version(version)
    text = decode(data)
    lines = text.split("\n")
    out = ParsedLocal()
    if not V.feature_file_directives(v):
        prefix = V.local_file_prefix(v)
        for line in lines:
            if not line:
                continue
            key, sep, value = line.partition("=")
            if prefix:
                key = (key[1:] if key.startswith("/") else key) if "/" in key else f"{file_name}-{key}"
            out.labels[key] = value if sep else "true"
        return out

    now = now or datetime.now(UTC)
    expiry = now
    skip_label = skip_feature = False
    with_no_label = V.feature_file_no_label_directives(v)
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            if line.startswith(DIRECTIVE_PREFIX):
                directive = line[len(DIRECTIVE_PREFIX):]
                name, sep, val = directive.partition("=")
                if name == "expiry-time":
                    if not sep:
                        out.warnings.append(f"{file_name}:{lineno}: invalid directive format in {line!r}, "
                                            "should be '# +expiry-time=value'")
                        continue
                    parsed = parse_rfc3339(val)
                    if parsed is None:
                        out.warnings.append(f"{file_name}:{lineno}: failed to parse expiry-date directive "
                                            f"{val.strip()!r} (RFC3339 expected); the previous expiry stays in force")
                    else:
                        expiry = parsed
                elif name == "no-label" and with_no_label:
                    skip_label = True
                elif name == "no-feature" and with_no_label:
                    skip_feature = True
                else:
                    out.warnings.append(f"{file_name}:{lineno}: unknown feature file directive {name!r} "
                                        f"(ignored by NFD {v})")
            continue
        key, sep, value = line.partition("=")
        value = value if sep else "true"
        if expiry < now:
            out.expired.append(key)
            continue
        if with_no_label:
            if skip_feature:
                out.features.pop(key, None)
            else:
                out.features[key] = value
            if skip_label:
                out.labels.pop(key, None)
            else:
                out.labels[key] = value
            skip_label = skip_feature = False
        else:
            out.labels[key] = value
    return out


@dataclass
class FeatureDirResult:
    labels: dict[str, str] = field(default_factory=dict)
    features: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # files that were read


def read_features_dir(path: str | os.PathLike[str], version: V.NfdVersion | str | None = None,
                      now: datetime | None = None) -> FeatureDirResult:
    """getFeaturesFromFiles: every regular file in name order; a later file overrides an earlier key."""
    v = V.parse_version(version)
    res = FeatureDirResult()
    d = Path(path)
    try:
        names = sorted(os.listdir(d))
    except FileNotFoundError:
        res.warnings.append(f"features directory {d} does not exist")
        return res
    except OSError as exc:
        res.warnings.append(f"unable to access {d}: {exc.strerror}")
        return res
    for name in names:
        if name.startswith(".") and V.dotfiles_ignored(v):
            continue
        p = d / name
        try:
            st = p.stat()
        except OSError as exc:
            res.warnings.append(f"{name}: failed to get filestat, skipping features file: {exc.strerror}")
            continue
        if not p.is_file():
            continue
        if V.feature_file_directives(v) and st.st_size > MAX_FEATURE_FILE_SIZE:
            res.warnings.append(f"{name}: file size limit exceeded: {st.st_size} bytes > {MAX_FEATURE_FILE_SIZE} "
                                "bytes; the whole file is skipped")
            continue
        if st.st_size > MAX_UNCAPPED_FILE_SIZE:
            res.warnings.append(f"{name}: {st.st_size} bytes: NFD {v} would read it whole, but its labels could never "
                                f"fit a Node object (etcd's {MAX_UNCAPPED_FILE_SIZE}-byte limit); skipped")
            continue
        try:
            with open_regular(p) as f:  # replaced by a FIFO since the stat: skipped, never waited on
                data = f.read(MAX_UNCAPPED_FILE_SIZE + 1)  # the file may grow after the stat
        except OSError as exc:
            res.warnings.append(f"{name}: failed to read file: {exc.strerror}")
            continue
        parsed = parse_feature_lines(data, name, v, now)
        res.files.append(name)
        res.warnings.extend(parsed.warnings)
        if parsed.expired:
            res.warnings.append(f"{name}: {len(parsed.expired)} expired key(s) skipped: {', '.join(parsed.expired)}")
        _merge(res.labels, parsed.labels, name, "label", res.warnings)
        _merge(res.features, parsed.features, name, "feature", res.warnings)
    return res


def _merge(into: dict[str, str], new: dict[str, str], source: str, what: str, warnings: list[str]) -> None:
    for k, val in new.items():
        if k in into and into[k] != val:
            warnings.append(f"{source}: overriding {what} {k!r} ({into[k]!r} -> {val!r})")
        into[k] = val
