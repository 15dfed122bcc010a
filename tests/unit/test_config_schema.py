"""The settings file against its typed schema: every kind of error names the file, the line and the key.

Issue 9: `read_only: ture` or `maybe` silently meant false; `libvirt_uris: 5` gave a traceback. Booleans are
what PyYAML (YAML 1.1) resolves as booleans in a plain scalar, as Kubernetes' YAML decoding into a bool
field accepts them (go-yaml v3 decodes yes/no/on/off into typed bools); a quoted "true" is a string.
Tolerations are checked as the API server checks a pod's: kubernetes pkg/apis/core/validation/validation.go
ValidateTolerations.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.config import ConfigError, load

CASES = [
    # (file text, line, key shown, what the message says)
    ("read_only: ture\n", 1, "read_only", "expected true or false, not 'ture'"),
    ("theme: dark\nread_only: maybe\n", 2, "read_only", "expected true or false, not 'maybe'"),
    ('theme: dark\n\nread_only: "true"\n', 3, "read_only", "a quoted string; write true or false without quotes"),
    ("read_only:\n", 1, "read_only", "expected true or false, not nothing"),
    ("read_only: 1\n", 1, "read_only", "expected true or false, not 1"),
    ("libvirt_uris: 5\n", 1, "libvirt_uris", "expected a list of libvirt URIs"),
    ("libvirt_uris:\n  - qemu:///system\n  - 5\n", 3, "libvirt_uris[1]", "expected a string, not 5"),
    ("image_pull_secrets: {a: b}\n", 1, "image_pull_secrets", "expected a list of secret names"),
    ("theme: [a]\n", 1, "theme", "expected a string, not a list"),
    ("nfd_version: 0.16\n", 1, "nfd_version", "expected a string, not 0.16 (quote it"),
    ("cloud: dev\ncolour: red\n", 2, "colour", "unknown setting"),
    ("readonly: true\n", 1, "readonly", "did you mean read_only?"),
    ("hook_store: s3\n", 1, "hook_store", "expected one of cluster, directory, not 's3'"),
    ("node_access: telnet\n", 1, "node_access", "expected one of debug-pod, ssh, guest-agent"),
    ("ssh_target: ip\n", 1, "ssh_target", "expected one of name, internal-ip"),
    ("key_overrides: 5\n", 1, "key_overrides", "expected a mapping of binding id to keys"),
    ("key_overrides:\n  nodes-filter: 5\n", 2, "key_overrides.nodes-filter", "expected a string, not 5"),
    ("theme: a\ntheme: b\n", 2, "theme", "given twice (first on line 1)"),
    # tolerations
    ("node_debug_tolerations: infra\n", 1, "node_debug_tolerations", "expected a list of tolerations"),
    ("node_debug_tolerations:\n  - infra\n", 2, "node_debug_tolerations[0]", "expected a toleration (a mapping)"),
    ("node_debug_tolerations:\n  - {key: a, operator: Maybe}\n", 2, "node_debug_tolerations[0].operator",
     "expected one of Equal, Exists, not 'Maybe'"),
    ("node_debug_tolerations:\n  - {key: a, effect: Never}\n", 2, "node_debug_tolerations[0].effect",
     "expected one of NoSchedule, PreferNoSchedule, NoExecute"),
    ("node_debug_tolerations:\n  - {kee: a}\n", 2, "node_debug_tolerations[0].kee", "unknown field"),
    ("node_debug_tolerations:\n  - {operator: Equal, value: x}\n", 2, "node_debug_tolerations[0]",
     "operator must be Exists when key is empty"),
    ("node_debug_tolerations:\n  - {key: a, effect: NoSchedule, tolerationSeconds: 5}\n", 2,
     "node_debug_tolerations[0]", "effect must be NoExecute when tolerationSeconds is set"),
    ("node_debug_tolerations:\n  - {key: a, operator: Exists, value: x}\n", 2, "node_debug_tolerations[0]",
     "value must be empty when operator is Exists"),
    ("node_debug_tolerations:\n  - {key: a, effect: NoExecute, tolerationSeconds: soon}\n", 2,
     "node_debug_tolerations[0].tolerationSeconds", "expected a whole number of seconds"),
    # contexts blocks
    ("contexts: [prod]\n", 1, "contexts", "expected a mapping of kube context name to settings"),
    ("contexts:\n  prod: true\n", 2, "contexts.prod", "expected a mapping of settings for that context"),
    ("contexts:\n  prod:\n    theme: light\n    read_only: ture\n", 4, "contexts.prod.read_only",
     "expected true or false, not 'ture'"),
    ("contexts:\n  prod:\n    colour: red\n", 3, "contexts.prod.colour", "unknown setting"),
    ("contexts:\n  prod:\n    kubeconfig: /x\n", 3, "contexts.prod.kubeconfig", "cannot be set per context"),
    # not YAML, not a mapping, not text
    ("theme: dark\nread_only: [\n", 3, "", "not valid YAML"),
    ("theme: dark\n\tread_only: true\n", 2, "read_only", "not valid YAML"),
    ("theme: a\n---\ntheme: b\n", 2, "", "expected a single document"),
    ("theme: !!python/object:os.system ls\n", 1, "theme", "not valid YAML"),
    ("theme: \x00\n", 1, "theme", "not allowed"),
    ("- a\n- b\n", 1, "", "expected a mapping of settings at the top level (key: value lines), not a list"),
    ("just words\n", 1, "", "expected a mapping of settings at the top level"),
]


@pytest.mark.parametrize(("text", "line", "key", "says"), CASES, ids=[c[0][:40] for c in CASES])
def test_each_bad_value_names_file_line_and_key(tmp_path: Path, text: str, line: int, key: str, says: str) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as e:
        load(path=cfg, env={})
    message = str(e.value)
    assert message.startswith(f"{cfg}:{line}: "), message
    if key:
        assert f":{line}: {key}: " in message, message
    assert says in message, message
    assert "\n" not in message


def test_the_first_problem_by_line_is_shown_with_a_count_of_the_rest(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("theme: 5\nread_only: ture\nhook_store: s3\n")
    with pytest.raises(ConfigError, match=r"config.yaml:1: theme: expected a string, not 5 .*\(and 2 more problems\)"):
        load(path=cfg, env={})


def test_non_utf8_bytes_name_the_line_and_key(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_bytes(b"theme: dark\nread_only: caf\xe9\n")
    with pytest.raises(ConfigError, match=r"config.yaml:2: read_only: not UTF-8 text \(byte 0xe9\)"):
        load(path=cfg, env={})


def test_a_huge_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_bytes(b"theme: dark\n" + b"# padding\n" * 200_000)  # 2 MB
    t0 = time.monotonic()
    with pytest.raises(ConfigError, match=r"config.yaml: larger than 1 MiB"):
        load(path=cfg, env={})
    assert time.monotonic() - t0 < 2  # read up to the cap only


def test_alias_bombs_and_deep_nesting_are_bounded(tmp_path: Path) -> None:
    """A 'billion laughs' and 10,000 levels of nesting end at once with a message (no RecursionError)."""
    cfg = tmp_path / "config.yaml"
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    cfg.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"config.yaml:\d+: more than 10000 YAML values \(aliases expanded\)"):
        load(path=cfg, env={})
    cfg.write_text("theme: " + "[" * 10_000 + "]" * 10_000 + "\n")
    with pytest.raises(ConfigError, match=r"config.yaml:1: theme: nested deeper than 16 levels"):
        load(path=cfg, env={})


def test_unreadable_file_is_an_error_naming_it(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.mkdir()
    with pytest.raises(ConfigError, match=r"config.yaml: cannot read it: Is a directory"):
        load(path=cfg, env={})


@pytest.mark.parametrize(("text", "read_only"), [
    ("read_only: true\n", True), ("read_only: false\n", False), ("read_only: True\n", True),
    ("read_only: yes\n", True), ("read_only: off\n", False), ("read-only: true\n", True),
])
def test_yaml_booleans_accepted(tmp_path: Path, text: str, read_only: bool) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text)
    assert load(path=cfg, env={}).read_only is read_only


def test_existing_settings_keep_their_meaning(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "# comments only above\ntheme: light\nnfd_version: v0.16.0\nhook_store: directory\nhook_dir: /srv/hooks\n"
        "libvirt_uris: qemu+ssh://a/system, qemu+ssh://b/system\nimage_pull_secrets: [regcred]\n"
        "node_debug_tolerations:\n  - {key: dedicated, operator: Equal, value: infra, effect: NoSchedule}\n"
        "  - {operator: Exists}\nkey_overrides: {nodes-filter: f}\nkubelet_unit:\nssh_user: admin\n"
    )
    s = load(path=cfg, env={})
    assert (s.theme, s.nfd_version, s.hook_store, s.hook_dir) == ("light", "v0.16.0", "directory", "/srv/hooks")
    assert s.libvirt_uris == ("qemu+ssh://a/system", "qemu+ssh://b/system")
    assert s.image_pull_secrets == ("regcred",)
    assert s.node_debug_tolerations == ({"key": "dedicated", "operator": "Equal", "value": "infra",
                                         "effect": "NoSchedule"}, {"operator": "Exists"})
    assert s.key_overrides == {"nodes-filter": "f"}
    assert s.kubelet_unit is None and s.ssh_user == "admin"  # `key:` with nothing = not set
    cfg.write_text("")
    assert load(path=cfg, env={}).theme == "dark"


# -- the environment: strings, strict too -----------------------------------------------------------------
@pytest.mark.parametrize(("value", "expected"), [
    ("true", True), ("TRUE", True), ("1", True), ("yes", True), ("Yes", True), ("on", True),
    ("false", False), ("0", False), ("no", False), ("NO", False), ("off", False), (" false ", False),
])
def test_env_read_only_words(value: str, expected: bool) -> None:
    assert load(path=Path("/nonexistent"), env={"CONSOLE_READ_ONLY": value}).read_only is expected


@pytest.mark.parametrize(("env", "says"), [
    ({"CONSOLE_READ_ONLY": "ture"}, "environment CONSOLE_READ_ONLY: read_only: expected true or false, not 'ture'"),
    ({"CONSOLE_READ_ONLY": "maybe"}, "environment CONSOLE_READ_ONLY: read_only: expected true or false"),
    ({"CONSOLE_HOOK_STORE": "s3"}, "environment CONSOLE_HOOK_STORE: hook_store: expected one of cluster"),
    ({"CONSOLE_NODE_ACCESS": "telnet"}, "environment CONSOLE_NODE_ACCESS: node_access: expected one of"),
    ({"CONSOLE_NODE_DEBUG_TOLERATIONS": "[{key: a, operator: Maybe}]"},
     "environment CONSOLE_NODE_DEBUG_TOLERATIONS: node_debug_tolerations[0].operator: expected one of Equal"),
    ({"CONSOLE_NODE_DEBUG_TOLERATIONS": "[{"}, "environment CONSOLE_NODE_DEBUG_TOLERATIONS:1: not valid YAML"),
    ({"CONSOLE_KEY_OVERRIDES": "[f]"}, "environment CONSOLE_KEY_OVERRIDES: key_overrides: expected a mapping"),
])
def test_env_values_are_strict_and_name_the_variable(env: dict[str, str], says: str) -> None:
    with pytest.raises(ConfigError) as e:
        load(path=Path("/nonexistent"), env=env)
    assert says in str(e.value)


def test_env_lists_and_empty_variables() -> None:
    s = load(path=Path("/nonexistent"), env={"CONSOLE_IMAGE_PULL_SECRETS": "a, b", "CONSOLE_READ_ONLY": "",
                                              "CONSOLE_KEY_OVERRIDES": "{nodes-filter: f}"})
    assert s.image_pull_secrets == ("a", "b") and s.read_only is False and s.key_overrides == {"nodes-filter": "f"}


def test_flags_are_checked_too() -> None:
    with pytest.raises(ConfigError, match="command line --node-access: node_access: expected one of debug-pod"):
        load({"node_access": "telnet"}, path=Path("/nonexistent"), env={})


def test_problems_on_one_line_of_mixed_key_types_do_not_break_the_report(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("contexts: {q: 5, 3: {}}\n")
    with pytest.raises(ConfigError, match=r"config.yaml:1: contexts.q: expected a mapping .*\(and 1 more problem\)"):
        load(path=cfg, env={})
    cfg.write_text("nfd_version: 2024-01-01\n")
    with pytest.raises(ConfigError, match=r"nfd_version: expected a string, not 2024-01-01 \(quote it"):
        load(path=cfg, env={})


_YAMLISH = st.text(alphabet=st.sampled_from(list("abr_o:nly- \n\t[]{},&*!'\"#tue0159\x00é")), max_size=200)
_KEYS = st.sampled_from(["read_only", "theme", "contexts", "libvirt_uris", "node_debug_tolerations", "x", "prod"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_YAMLISH | st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3), max_leaves=12,
).map(lambda doc: yaml.safe_dump(doc)))
def test_any_text_is_settings_or_one_config_error(tmp_path: Path, text: str) -> None:
    """Fuzz: whatever the file holds, load() returns Settings or raises ConfigError naming the file."""
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        load(path=cfg, env={})
    except ConfigError as e:
        assert str(e).startswith(str(cfg)) and "\n" not in str(e)


@settings(max_examples=200, deadline=None)
@given(value=st.text(max_size=12))
def test_any_env_value_is_a_bool_or_an_error_naming_the_variable(value: str) -> None:
    try:
        s = load(path=Path("/nonexistent"), env={"CONSOLE_READ_ONLY": value, "CONSOLE_NODE_DEBUG_TOLERATIONS": value})
    except ConfigError as e:
        assert str(e).startswith("environment CONSOLE_")
    else:
        assert value.strip() == "" or value.strip().lower() in ("true", "false", "1", "0", "yes", "no", "on", "off")
        assert isinstance(s.read_only, bool)
