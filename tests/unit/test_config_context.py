"""Per-context overrides apply for the context actually in use, and read_only is decided once, in config.load.

Issue 9: `contexts: {prod: {read_only: true}}` applied only with an explicit --context, not to the
kubeconfig's current context. The context in use is what kubectl would use: --context, else the
kubeconfig's current-context; with a $KUBECONFIG list the first file that sets current-context wins
(client-go tools/clientcmd/loader.go, ClientConfigLoadingRules.Load: "The first file to set a particular
map key wins", current-context merged the same way).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from console.config import ConfigError, Settings, for_context, kubeconfig_current_context, load

CONFIG = "theme: dark\ncontexts:\n  prod: {read_only: true, theme: high-contrast}\n  dev: {theme: light}\n"


def kubeconfig(path: Path, current: str | None, names: tuple[str, ...] = ("prod", "dev")) -> Path:
    ctxs = "".join(f"- name: {n}\n  context: {{cluster: c, user: u}}\n" for n in names)
    head = f"current-context: {current}\n" if current is not None else ""
    path.write_text(f"apiVersion: v1\nkind: Config\n{head}clusters:\n- name: c\n  cluster: {{server: https://x:6443}}\n"
                    f"contexts:\n{ctxs}users:\n- name: u\n  user: {{token: t}}\n")
    return path


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    return path


def test_current_context_of_the_kubeconfig_applies_without_any_flag(tmp_path: Path, cfg: Path) -> None:
    kc = kubeconfig(tmp_path / "kc", "prod")
    s = load({"kubeconfig": str(kc)}, path=cfg, env={})
    assert s.read_only is True and s.theme == "high-contrast"
    assert s.context is None  # the connection still picks the current context itself
    kubeconfig(kc, "dev")
    s = load({"kubeconfig": str(kc)}, path=cfg, env={})
    assert s.read_only is False and s.theme == "light"


def test_kubeconfig_from_env_and_home(tmp_path: Path, cfg: Path) -> None:
    kc = kubeconfig(tmp_path / "kc", "prod")
    assert load(path=cfg, env={"KUBECONFIG": str(kc)}).read_only is True
    assert load(path=cfg, env={"CONSOLE_KUBECONFIG": str(kc)}).read_only is True
    (tmp_path / "home" / ".kube").mkdir(parents=True)
    kubeconfig(tmp_path / "home" / ".kube" / "config", "prod")
    assert load(path=cfg, env={"HOME": str(tmp_path / "home")}).read_only is True
    # --kubeconfig is that file alone, as kubectl's: $KUBECONFIG is not read then
    other = kubeconfig(tmp_path / "other", "dev")
    assert load({"kubeconfig": str(other)}, path=cfg, env={"KUBECONFIG": str(kc)}).read_only is False


def test_kubeconfig_list_first_file_setting_current_context_wins(tmp_path: Path, cfg: Path) -> None:
    none = kubeconfig(tmp_path / "a", None)
    empty = kubeconfig(tmp_path / "b", "")
    prod = kubeconfig(tmp_path / "c", "prod")
    dev = kubeconfig(tmp_path / "d", "dev")
    missing = tmp_path / "missing"
    listed = os.pathsep.join(map(str, (missing, none, empty, prod, dev)))
    assert kubeconfig_current_context(None, {"KUBECONFIG": listed}) == "prod"
    assert load(path=cfg, env={"KUBECONFIG": listed}).read_only is True
    listed = os.pathsep.join(map(str, (dev, prod)))
    assert load(path=cfg, env={"KUBECONFIG": listed}).read_only is False


def test_explicit_context_overrides_the_current_one(tmp_path: Path, cfg: Path) -> None:
    kc = kubeconfig(tmp_path / "kc", "prod")
    s = load({"kubeconfig": str(kc), "context": "dev"}, path=cfg, env={})
    assert s.read_only is False and s.theme == "light" and s.context == "dev"
    assert load({"kubeconfig": str(kc)}, path=cfg, env={"CONSOLE_CONTEXT": "dev"}).read_only is False
    kubeconfig(kc, "dev")
    assert load({"kubeconfig": str(kc), "context": "prod"}, path=cfg, env={}).read_only is True


@pytest.mark.parametrize("content", [
    None, b"", b"\x00\xff garbage", b"- a\n- b\n", b"current-context: [\n", b"current-context: [prod]\n",
    b"[" * 5000, b"a: &a [x]\nb: [*a, *a]\ncurrent-context: *a\n",
], ids=["missing", "empty", "binary", "a-list", "bad-yaml", "list-valued", "deep", "alias"])
def test_a_missing_or_garbage_kubeconfig_means_no_context(tmp_path: Path, cfg: Path, content: bytes | None) -> None:
    """Reading the kubeconfig for its context never fails: the connection reports the kubeconfig's error."""
    kc = tmp_path / "kc"
    if content is not None:
        kc.write_bytes(content)
    assert kubeconfig_current_context(str(kc), {}) is None
    s = load({"kubeconfig": str(kc)}, path=cfg, env={})
    assert s.read_only is False and s.theme == "dark"


def test_read_only_precedence(tmp_path: Path, cfg: Path) -> None:
    """--read-only > CONSOLE_READ_ONLY > the context's block > the top level > false."""
    kc = str(kubeconfig(tmp_path / "kc", "dev"))
    cfg.write_text("read_only: true\ncontexts:\n  dev: {read_only: false}\n  prod: {read_only: true}\n")
    assert load({"kubeconfig": kc}, path=cfg, env={}).read_only is False  # dev's block beats the top level
    assert load({"kubeconfig": kc, "context": "other"}, path=cfg, env={}).read_only is True  # no block: top level
    assert load({"kubeconfig": kc}, path=cfg, env={"CONSOLE_READ_ONLY": "yes"}).read_only is True
    assert load({"kubeconfig": kc, "context": "prod"}, path=cfg, env={"CONSOLE_READ_ONLY": "0"}).read_only is False
    assert load({"kubeconfig": kc, "read_only": True}, path=cfg, env={"CONSOLE_READ_ONLY": "0"}).read_only is True


def test_a_context_block_is_validated_even_when_not_in_use(tmp_path: Path, cfg: Path) -> None:
    cfg.write_text("contexts:\n  dev: {}\n  prod:\n    read_only: ture\n")
    with pytest.raises(ConfigError, match=r"config.yaml:4: contexts.prod.read_only: expected true or false"):
        load({"kubeconfig": str(kubeconfig(tmp_path / "kc", "dev"))}, path=cfg, env={})


def test_for_context_resolves_again_as_load_did(tmp_path: Path, cfg: Path) -> None:
    """The TUI's `:ctx NAME`: the same resolution with NAME as --context; the connections stay."""
    kc = str(kubeconfig(tmp_path / "kc", "dev"))
    s = load({"kubeconfig": kc, "theme": None}, path=cfg, env={"CONSOLE_LIBVIRT_URI": "qemu:///system"})
    assert s.read_only is False and s.theme == "light"
    prod = for_context(s, "prod")
    assert prod.read_only is True and prod.theme == "high-contrast" and prod.context == "prod"
    assert prod.kubeconfig == kc and prod.libvirt_uris == ("qemu:///system",)
    assert for_context(prod, "dev").read_only is False
    cfg.write_text("read_only: maybe\n")  # edited since: the switch reports it
    with pytest.raises(ConfigError, match="read_only: expected true or false"):
        for_context(prod, "dev")
    built = Settings(read_only=True)  # built in code: kept
    assert for_context(built, "dev") == Settings(read_only=True, context="dev")
