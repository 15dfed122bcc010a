"""Pure logic behind the TUI: command grammar, filters, label selectors, label groups, themes (the VM
read model's staleness: tests/unit/infra/test_vms.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.kube.nodelabels import label_group
from console.kube.selector import SelectorError, parse_selector
from console.tui.command_grammar import COMMANDS, Command, CommandError, completions, parse_command
from console.tui.filter import parse_filter
from console.tui.themes import DOMAIN_VARIABLES, load_themes, shipped_dir

AVX = "feature.node.kubernetes.io/cpu-cpuid.AVX512F"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (":nodes", Command("nodes")),
        ("nodes", Command("nodes")),
        (":no", Command("nodes")),
        (":pending", Command("pending")),
        (":po", Command("pending")),
        (":hooks", Command("hooks")),
        (":rules", Command("rules")),
        (":node kube-worker02", Command("node", "kube-worker02")),
        (":nodes kube-worker02", Command("node", "kube-worker02")),
        (":ctx", Command("ctx")),
        (":ctx prod", Command("ctx", "prod")),
        (":context prod", Command("ctx", "prod")),
        (":scale-up worker-3", Command("scale-up", "worker-3")),
        (":theme light", Command("theme", "light")),
        (":q", Command("quit")),
        (":quit", Command("quit")),
        ("  :help  ", Command("help")),
    ],
)
def test_command_grammar(text: str, expected: Command) -> None:
    assert parse_command(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (":", "empty command"),
        (":nodez", "unknown command :nodez"),
        (":scale-up", "needs an argument"),
        (":pending now", "takes no argument"),
        (":node a b", "one argument"),
        (":penging", "did you mean :pending"),
    ],
)
def test_command_grammar_errors(text: str, message: str) -> None:
    with pytest.raises(CommandError, match=message):
        parse_command(text)


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [("nodse", ":nodes"), ("nod", ":nodes"), ("pendig", ":pending"), ("ruels", ":rules"), ("hoks", ":hooks"),
     ("thme", ":theme"), ("scale", ":scale-up"), ("qiut", ":quit"), ("contxt", ":ctx")],
)
def test_a_mistyped_command_suggests_the_command_that_exists(typed: str, suggested: str) -> None:
    """Before: `:nodse` said `did you mean :no?` (the first alias sharing two letters), an alias, not the command
    help lists. Now the closest command by difflib's ratio, named as help names it."""
    with pytest.raises(CommandError) as e:
        parse_command(f":{typed}")
    assert f"did you mean {suggested}?" in str(e.value)
    hint = str(e.value).split("did you mean ")[1].split("?")[0]
    assert hint.lstrip(":") in COMMANDS  # a command that exists, not an alias


def test_a_word_close_to_nothing_gets_no_guess() -> None:
    with pytest.raises(CommandError) as e:
        parse_command(":xyzzy")
    assert "did you mean" not in str(e.value) and "known: :nodes, :pending" in str(e.value)


def test_completions() -> None:
    assert completions(":sc") == ["scale-up"]
    assert "nodes" in completions("")


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        (f"{AVX}=true", {AVX: "true"}, True),
        (f"{AVX}=true", {AVX: "false"}, False),
        (f"{AVX}=true", {}, False),
        (f"{AVX}==true", {AVX: "true"}, True),
        (f"{AVX}!=true", {}, True),
        (f"{AVX}!=true", {AVX: "true"}, False),
        (AVX, {AVX: "x"}, True),
        (f"!{AVX}", {AVX: "x"}, False),
        (f"!{AVX}", {}, True),
        (f"{AVX}=true,!example.dev/x", {AVX: "true"}, True),
        (f"{AVX}=true,!example.dev/x", {AVX: "true", "example.dev/x": ""}, False),
        ("zone in (a, b)", {"zone": "b"}, True),
        ("zone in (a,b)", {"zone": "c"}, False),
        ("zone notin (a,b)", {"zone": "c"}, True),
        ("zone notin (a,b)", {}, True),
        ("zone notin (a,b),tier=gold", {"zone": "c", "tier": "gold"}, True),
        ("", {"a": "b"}, True),
    ],
)
def test_label_selector(selector: str, labels: dict[str, str], matches: bool) -> None:
    assert parse_selector(selector).matches(labels) is matches


@pytest.mark.parametrize("bad", ["a=b=c", "zone in ()", "a b", "=x", "!", "a,,b"])
def test_label_selector_errors(bad: str) -> None:
    with pytest.raises(SelectorError):
        parse_selector(bad)


@pytest.mark.parametrize(
    ("expr", "haystack", "labels", "matches"),
    [
        ("worker", "kube-worker01 ready", {}, True),
        ("WORKER", "kube-worker01 ready", {}, True),
        ("!worker", "kube-worker01 ready", {}, False),
        ("!worker", "kube-controlplane01", {}, True),
        (f"-l {AVX}=true", "kube-worker03", {AVX: "true"}, True),
        (f"-l {AVX}=true", "kube-worker01", {}, False),
        (f"worker -l {AVX}=true", "kube-worker03", {AVX: "true"}, True),
        (f"control -l {AVX}=true", "kube-worker03", {AVX: "true"}, False),
        (f"--selector={AVX}", "kube-worker03", {AVX: "true"}, True),
        ("", "anything", {}, True),
    ],
)
def test_filter(expr: str, haystack: str, labels: dict[str, str], matches: bool) -> None:
    assert parse_filter(expr).matches(haystack, labels) is matches


def test_filter_needs_a_selector_after_l() -> None:
    with pytest.raises(SelectorError, match="needs a selector"):
        parse_filter("-l ")


@pytest.mark.parametrize(
    ("key", "group"),
    [
        (AVX, "cpu"),
        ("feature.node.kubernetes.io/kernel-version.major", "kernel"),
        ("feature.node.kubernetes.io/pci-0300_1234.present", "pci"),
        ("feature.node.kubernetes.io/usb-fe_1a6e_089a.present", "usb"),
        ("feature.node.kubernetes.io/system-os_release.ID", "system"),
        ("feature.node.kubernetes.io/memory-numa", "memory"),
        ("feature.node.kubernetes.io/storage-nonrotationaldisk", "storage"),
        ("feature.node.kubernetes.io/storage.tier", "local"),
        ("feature.node.kubernetes.io/my-hook-label", "local"),
        ("vendor.feature.node.kubernetes.io/thing", "local"),
        ("feature.node.kubernetes.io/custom-rdma.available", "local"),
        ("example.com/rack", "other"),
        ("kubernetes.io/hostname", "other"),
    ],
)
def test_label_group(key: str, group: str) -> None:
    assert label_group(key) == group


def test_shipped_themes_load_with_every_domain_variable() -> None:
    found = load_themes([shipped_dir()])
    assert found.errors == []
    assert {"dark", "light", "high-contrast"} <= set(found.themes)
    for theme in found.themes.values():
        assert set(DOMAIN_VARIABLES) <= set(theme.variables), theme.name


def test_broken_and_user_themes(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("name: broken\ncolors: {primary: not-a-colour}\n")
    (tmp_path / "notyaml.yaml").write_text("name: [unclosed\n")
    (tmp_path / "mine.yaml").write_text("name: mine\ncolors: {primary: '#123456'}\nvariables: {danger: '#ff00ff'}\n")
    (tmp_path / "dark.yaml").write_text("name: dark\ncolors: {primary: '#000001'}\n")
    found = load_themes([shipped_dir(), tmp_path])
    assert len(found.errors) == 2
    assert any("broken.yaml" in e and "not a colour" in e for e in found.errors)
    assert found.themes["mine"].variables["danger"] == "#ff00ff"
    assert found.themes["mine"].variables["status-ready"]  # filled from the theme's colours
    assert found.themes["dark"].primary == "#000001"  # the user's theme wins by name


def test_themes_ship_in_the_wheel_config() -> None:
    import tomllib

    cfg = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert cfg["tool"]["setuptools"]["package-dir"]["console.themes"] == "themes"  # installed as console.themes
    assert "console.themes" in cfg["tool"]["setuptools"]["packages"]
    assert (shipped_dir() / "dark.yaml").exists()
