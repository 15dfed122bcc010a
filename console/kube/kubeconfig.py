"""The kubeconfig as kubectl sees it: which files, merged how (k8s.io/client-go tools/clientcmd loader.go).

- `--kubeconfig FILE`: that file alone, no merging; it must exist.
- else every file in $KUBECONFIG (os.pathsep-separated, duplicates dropped, missing files skipped), merged:
  "the first file to set a particular map key wins" (a cluster, user or context name), and current-context is
  the first non-empty one (client-go merges the non-map values in reverse order, so the first file wins);
- else $HOME/.kube/config.
Each cluster/user keeps the path of the file that defined it, so relative certificate and token paths resolve
against that file, as client-go's ResolveLocalPaths does (kubernetes-python's ConfigNode carries the path).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SECTIONS = ("clusters", "users", "contexts")


class KubeConfigError(Exception):
    """The kubeconfig is missing or unusable; the message says what to do."""


def shape_errors() -> tuple[type[BaseException], ...]:
    """What the kubernetes client raises on a file that is not a kubeconfig: it indexes the YAML blindly (a list,
    a string or `contexts: 5` end in TypeError/AttributeError/KeyError), and garbage or non-UTF-8 bytes end in
    yaml's errors or UnicodeDecodeError (a ValueError)."""
    import yaml

    return (TypeError, AttributeError, KeyError, IndexError, ValueError, yaml.YAMLError)


def not_a_kubeconfig(path: str, e: BaseException) -> KubeConfigError:
    why = str(e).splitlines()[0][:160] if str(e) else "it cannot be parsed"
    return KubeConfigError(f"{path} is not a kubeconfig ({why}); expected a Config with clusters, users and "
                           "contexts. Set KUBECONFIG or pass --kubeconfig.")


def candidate_files(explicit: str | None = None, env: Mapping[str, str] | None = None) -> list[str]:
    """The files kubectl would read, in precedence order (existing or not)."""
    env = os.environ if env is None else env
    if explicit:
        return [explicit]
    if env.get("KUBECONFIG"):
        return list(dict.fromkeys(p for p in env["KUBECONFIG"].split(os.pathsep) if p))
    home = env.get("HOME") or str(Path.home())
    return [str(Path(home) / ".kube" / "config")]


@dataclass(frozen=True)
class Merged:
    """The merged kubeconfig: `config` is a kubernetes ConfigNode (KubeConfigLoader's config_dict)."""

    files: tuple[str, ...]  # the files read, in precedence order
    config: Any
    current_context: str

    @property
    def display(self) -> str:
        return os.pathsep.join(self.files)

    def entry(self, section: str, name: str) -> Any:
        """The ConfigNode of a named cluster/user/context (its .path is its file), or None."""
        return next((e for e in self.config.value[section] if e.value.get("name") == name), None)

    def context_names(self) -> list[str]:
        return [str(e.value["name"]) for e in self.config.value["contexts"]]


def load(explicit: str | None = None, env: Mapping[str, str] | None = None) -> Merged | None:
    """The merged kubeconfig, or None when no file exists (and --kubeconfig was not given)."""
    from kubernetes.config.kube_config import ConfigNode

    paths = candidate_files(explicit, env)
    if explicit and not Path(explicit).exists():
        raise KubeConfigError(f"no kubeconfig at {explicit}. Set KUBECONFIG or pass --kubeconfig.")
    files: list[str] = []
    merged: dict[str, Any] = {s: [] for s in SECTIONS}
    current = ""
    for path in paths:
        doc = _read(path)
        if doc is None:
            continue
        files.append(path)
        for section in SECTIONS:
            seen = {e.value["name"] for e in merged[section]}
            for item in doc.get(section) or []:
                if not isinstance(item, dict) or "name" not in item:
                    raise not_a_kubeconfig(path, ValueError(f"an entry of {section} has no name"))
                if item["name"] not in seen:  # the first file to set a name wins
                    item = _resolve_paths(section, item, path)
                    merged[section].append(ConfigNode(f"{path}/{section}[name={item['name']}]", item, path))
                    seen.add(item["name"])
        current = current or str(doc.get("current-context") or "")
    if not files:
        return None
    merged["current-context"] = current
    return Merged(tuple(files), ConfigNode("kube-config", merged, files[0]), current)


_FILE_KEYS = {"clusters": ("cluster", ("certificate-authority",)),
              "users": ("user", ("client-certificate", "client-key", "tokenFile"))}


def check_named_files(merged: Merged, context: str) -> None:
    """KubeConfigError naming the key and the path when a file the context's cluster or user names
    (certificate-authority, client-certificate, client-key, tokenFile) is not a regular file: the client would
    wait on a FIFO for ever. A missing file is left to the loader, which says so."""
    from console.userfile import check_regular

    ctx = merged.entry("contexts", context)
    body = (ctx.value.get("context") or {}) if ctx is not None else {}
    if not isinstance(body, dict):
        return
    for section, ref in (("clusters", "cluster"), ("users", "user")):
        entry = merged.entry(section, str(body.get(ref) or ""))
        inner = (entry.value.get(ref) or {}) if entry is not None else {}
        for key in _FILE_KEYS[section][1] if isinstance(inner, dict) else ():
            path = inner.get(key)
            if not isinstance(path, str) or not path:
                continue
            try:
                check_regular(path)
            except FileNotFoundError:
                continue
            except OSError as e:
                raise KubeConfigError(f"kubeconfig {entry.path}: {ref} {body.get(ref)}: {key} {path}: "
                                      f"{e.strerror}; point it at the file itself") from e


def _resolve_paths(section: str, item: dict[str, Any], path: str) -> dict[str, Any]:
    """Relative file references made absolute against the directory of the file that holds them (client-go
    clientcmd ResolveLocalPaths: GetClusterFileReferences / GetAuthInfoFileReferences, and an exec command
    holding a path separator). kubernetes-python resolves a user's certificate against the cluster's file."""
    if section not in _FILE_KEYS:
        return item
    inner_key, keys = _FILE_KEYS[section]
    inner = item.get(inner_key)
    if not isinstance(inner, dict):
        return item
    base = Path(path).resolve().parent
    inner = dict(inner)
    for key in keys:
        value = inner.get(key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            inner[key] = str(base / value)
    command = (inner.get("exec") or {}).get("command") if isinstance(inner.get("exec"), dict) else None
    if isinstance(command, str) and os.sep in command and not os.path.isabs(command):
        inner["exec"] = {**inner["exec"], "command": str(base / command)}
    return {**item, inner_key: inner}


def _read(path: str) -> dict[str, Any] | None:
    import yaml

    from console.userfile import open_regular

    try:
        with open_regular(path) as f:  # a FIFO or a device is refused, never waited on
            doc = yaml.safe_load(f.read().decode("utf-8"))
    except FileNotFoundError:
        return None  # client-go skips missing files of $KUBECONFIG
    except OSError as e:
        raise KubeConfigError(f"cannot read kubeconfig {path}: {e.strerror or e}. Set KUBECONFIG or pass "
                              "--kubeconfig.") from e
    except shape_errors() as e:
        raise not_a_kubeconfig(path, e) from e
    if doc is None:
        return {}  # an empty file is an empty config
    if not isinstance(doc, dict) or any(not isinstance(doc.get(s) or [], list) for s in SECTIONS):
        raise not_a_kubeconfig(path, ValueError("not a mapping of clusters, users and contexts lists"))
    return doc


def describe(explicit: str | None, context: str = "") -> dict[str, str]:
    """For messages: the context in use, its cluster, user, server, how the user authenticates, and the file
    that defines the context (or the files read). Lenient: a bad or missing file gives empty parts."""
    out = {"kubeconfig": os.pathsep.join(candidate_files(explicit)), "context": context, "cluster": "", "user": "",
           "server": "", "auth": ""}
    unusable: tuple[type[BaseException], ...] = (KubeConfigError, *shape_errors())
    try:
        merged = load(explicit)
    except unusable:
        return out
    if merged is None:
        return out
    try:
        return out | _parts(merged, context or merged.current_context)
    except (AttributeError, TypeError, KeyError):  # a context that is not a mapping: the loader says so
        return out


def _parts(merged: Merged, name: str) -> dict[str, str]:
    ctx = merged.entry("contexts", name)
    body = (ctx.value.get("context") or {}) if ctx is not None else {}
    cluster = merged.entry("clusters", str(body.get("cluster") or ""))
    user = merged.entry("users", str(body.get("user") or ""))
    return {"kubeconfig": ctx.path if ctx is not None else merged.display, "context": name,
            "cluster": str(body.get("cluster") or ""), "user": str(body.get("user") or ""),
            "server": str(((cluster.value.get("cluster") or {}) if cluster is not None else {}).get("server") or ""),
            "auth": auth_kind((user.value.get("user") or {}) if user is not None else {})}


def auth_kind(user: Mapping[str, Any]) -> str:
    """How a kubeconfig user authenticates, for the advice on a 401."""
    if not isinstance(user, Mapping):
        return ""
    if isinstance(user.get("exec"), Mapping):
        return f"exec plugin {user['exec'].get('command') or '?'}"
    if user.get("auth-provider"):
        return f"auth-provider {(user['auth-provider'] or {}).get('name') or '?'}"
    if user.get("tokenFile"):
        return f"token file {user['tokenFile']}"
    if user.get("token"):
        return "token"
    if user.get("client-certificate") or user.get("client-certificate-data"):
        return "client certificate"
    return ""
