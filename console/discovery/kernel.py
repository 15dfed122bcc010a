"""kernel source: version, kconfig, loaded modules, selinux."""

from __future__ import annotations

import gzip
import re

from console.discovery.paths import HostPaths, read_attr, read_text
from console.nfd.model import Features

DEFAULT_CONFIG_OPTS = ("NO_HZ", "NO_HZ_IDLE", "NO_HZ_FULL", "PREEMPT")
_VERSION_RE = re.compile(r"^(?P<major>\d+)(\.(?P<minor>\d+))?(\.(?P<revision>\d+))?(-.*)?$")


def parse_kernel_version(osrelease: str) -> dict[str, str]:
    """source/kernel/version.go: clean `full`, then major/minor/revision."""
    full = re.sub(r"[^-A-Za-z0-9_.]", "_", osrelease.strip()).strip("-_.")
    out = {"full": full}
    m = _VERSION_RE.match(full)
    if m:
        out.update({k: m.group(k) or "" for k in ("major", "minor", "revision")})
    return out


def parse_kconfig(text: str) -> dict[str, str]:
    """CONFIG_X=val lines, without the CONFIG_ prefix and with quotes stripped."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"^CONFIG_(\w+)=(.*)$", line.strip())
        if m:
            out[m.group(1)] = m.group(2).strip('"')
    return out


def _read_kconfig(paths: HostPaths, ver: str) -> tuple[str | None, str]:
    gz = paths.proc / "config.gz"
    try:
        return gzip.decompress(gz.read_bytes()).decode("utf-8", "replace"), str(gz)
    except (OSError, EOFError, gzip.BadGzipFile):
        pass
    for p in (paths.usr_src / f"linux-{ver}" / ".config", paths.usr_src / "linux" / ".config",
              paths.usr_lib / "modules" / ver / "config", paths.usr_lib / "kernel" / f"config-{ver}",
              paths.lib / "modules" / ver / "build" / ".config", paths.boot / f"config-{ver}"):
        t = read_text(p)
        if t is not None:
            return t, str(p)
    return None, ""


def discover_kernel(paths: HostPaths, features: Features, warnings: list[str]) -> None:
    rel = read_attr(paths.proc / "sys" / "kernel" / "osrelease")
    if rel is None:
        warnings.append(f"kernel: {paths.proc / 'sys/kernel/osrelease'} not readable")
        return
    features.attributes["kernel.version"] = parse_kernel_version(rel)
    text, _ = _read_kconfig(paths, rel)
    if text is None:
        warnings.append("kernel: no kernel config found; kernel.config is absent (rules on it will not match)")
    else:
        features.attributes["kernel.config"] = parse_kconfig(text)
    mods = read_text(paths.proc / "modules")
    if mods is not None:
        loaded = {line.split()[0] for line in mods.splitlines() if line.strip()}
        features.flags["kernel.loadedmodule"] = loaded
        builtin = read_text(paths.usr_lib / "modules" / rel / "modules.builtin") or read_text(
            paths.lib / "modules" / rel / "modules.builtin")
        if builtin is not None:
            names = {re.sub(r"\.ko(\.\w+)?$", "", line.strip().rsplit("/", 1)[-1]) for line in builtin.splitlines()
                     if line.strip()}
            features.flags["kernel.enabledmodule"] = loaded | names
    enforce = read_attr(paths.sys / "fs" / "selinux" / "enforce")
    features.attributes["kernel.selinux"] = {"enabled": "true" if (enforce or "").startswith("1") else "false"}


def kernel_labels(features: Features, config_opts: tuple[str, ...] = DEFAULT_CONFIG_OPTS) -> dict[str, str]:
    labels = {f"kernel-version.{k}": v for k, v in features.attributes.get("kernel.version", {}).items()}
    cfg = features.attributes.get("kernel.config", {})
    for opt in config_opts:
        if opt in cfg:
            labels[f"kernel-config.{opt}"] = "true" if cfg[opt] in ("y", "m") else cfg[opt]
    if features.attributes.get("kernel.selinux", {}).get("enabled") == "true":
        labels["kernel-selinux.enabled"] = "true"
    return labels
