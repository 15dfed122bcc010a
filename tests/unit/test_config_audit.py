import json

import pytest

from console.audit import AuditLog, redact
from console.config import ConfigError, load


def test_precedence_file_context_env_flags(tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text("theme: light\nread_only: false\ncontexts:\n  prod: {read_only: true, theme: high-contrast}\n")
    s = load(path=cfg, env={})
    assert s.theme == "light" and s.read_only is False
    s = load({"context": "prod"}, path=cfg, env={})
    assert s.theme == "high-contrast" and s.read_only is True
    s = load({"context": "prod"}, path=cfg, env={"CONSOLE_THEME": "dark"})
    assert s.theme == "dark" and s.read_only is True
    s = load({"context": "prod", "theme": "mine"}, path=cfg, env={"CONSOLE_THEME": "dark"})
    assert s.theme == "mine"


def test_env_clients(tmp_path):
    s = load(path=tmp_path / "none.yaml", env={"CONSOLE_LIBVIRT_URI": "qemu:///system", "OS_CLOUD": "lab"})
    assert s.libvirt_uris == ("qemu:///system",) and s.cloud == "lab"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("theme: [", ":1: theme: not valid YAML"),
        ("- a\n", ":1: expected a mapping"),
        ("colour: red\n", ":1: colour: unknown setting"),
        ("hook_store: s3\n", ":1: hook_store: expected one of cluster, directory, not 's3'"),
    ],
)
def test_bad_config_names_file_and_key(tmp_path, text, message):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError, match=message) as e:
        load(path=cfg, env={})
    assert str(cfg) in str(e.value)


def test_audit_appends_redacted_json_lines(tmp_path):
    log = AuditLog(tmp_path / "state" / "audit.log")
    rid = log.intent("node.label", "node/kube-worker01", before={"a": "1", "token": "s3cret"})["id"]
    log.outcome(rid, "node.label", "node/kube-worker01", after={"a": "2", "token": "s3cret"})
    entries = log.entries()
    assert [(e["action"], e["phase"], e["id"]) for e in entries] == [("node.label", "intent", rid),
                                                                     ("node.label", "outcome", rid)]
    assert entries[1]["after"] == {"a": "2", "token": "***"} and "@" in entries[0]["who"]
    assert "s3cret" not in log.path.read_text()
    assert (log.path.stat().st_mode & 0o777) == 0o600
    assert redact({"auth": {"password": "p"}, "x": [{"Token": 1}]}) == {"auth": "***", "x": [{"Token": "***"}]}
    json.loads(log.path.read_text().splitlines()[1])
