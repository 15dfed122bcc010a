"""Issue 20 point 8: messages say what they mean. Redaction hides secrets and nothing else; no raw exception class
name reaches a user; a theme too big is refused naming the file and the console's own limit; a broken theme
named by --theme is exit 2 for every command, as the README says.

Before: `its token: run it by hand` became `its token: *** it by hand` (console/faults.py's `token[=:]\\s*`
took the next word whatever it was); step failures read `InfraError: …` / `MaxRetryError: HTTPSConnectionPool(…)`;
a 5.9 MiB theme was "over the 1.5 MiB limit (etcd's default request limit for one API object)";
`console --theme BROKEN get nodes` exited 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from console import faults

# -- redaction -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "the console ran the exec plugin oidc-login again and the server still refused its token: run it by hand",
    "password: check it in clouds.yaml",
    "token: expired since yesterday",
    "Token: see the docs",
])
def test_ordinary_words_after_a_secret_key_are_kept(text: str) -> None:
    assert faults.redact(text) == text


@pytest.mark.parametrize(("text", "secret"), [
    ("Authorization: Bearer abc.def-ghi", "abc.def-ghi"),
    ("token=xyz", "xyz"),
    ("token: eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.sig", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.sig"),
    ("token: abcdef.0123456789abcdef is not valid", "abcdef.0123456789abcdef"),
    ('{"token": "sekrit"}', "sekrit"),
    ("{'password': 'hunter'}", "hunter"),
    ("password: hunter2", "hunter2"),
    ("password: hunter", "hunter"),  # a single word ending the text is a value, not prose
    ("X-Auth-Token: gAAAAABk_token", "gAAAAABk_token"),
    ("password=correct horse", "correct"),
])
def test_secret_values_are_redacted(text: str, secret: str) -> None:
    out = faults.redact(text)
    assert secret not in out and "***" in out


def test_exec_plugin_advice_survives_the_fault_message(tmp_path: Path) -> None:
    from kubernetes.client.exceptions import ApiException

    kc = tmp_path / "kubeconfig"
    kc.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                  "clusters: [{name: k, cluster: {server: 'https://10.0.0.1:6443'}}]\n"
                  "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: oidc}}}]\n"
                  "contexts: [{name: c, context: {cluster: k, user: u}}]\n")
    fault = faults.classify(ApiException(status=401, reason="Unauthorized"), faults.Where(str(kc)))
    assert fault is not None and "its token: run it by hand" in fault.message


# -- raw class names -----------------------------------------------------------------------------------------------


def _max_retry() -> BaseException:
    from urllib3.exceptions import MaxRetryError

    return MaxRetryError(None, "/api/v1/nodes/n1", "too many redirects")  # type: ignore[arg-type]


def test_a_step_error_is_said_in_words() -> None:
    from console.infra.protocol import InfraError
    from console.runbook.engine import describe_error

    assert describe_error(InfraError("cannot read server vm-1: gone")) == "cannot read server vm-1: gone"
    said = describe_error(_max_retry())
    assert "MaxRetryError" not in said and "/api/v1/nodes/n1" in said
    for e in (KeyError("spec"), ValueError("bad"), OSError(5, "Input/output error")):
        assert type(e).__name__ not in describe_error(e), describe_error(e)


def test_an_unclassified_api_error_is_said_in_words() -> None:
    from console.cli_nfd_deploy import _unreachable
    from console.config import Settings

    stop = _unreachable(_max_retry(), Settings())  # type: ignore[arg-type]
    assert "MaxRetryError" not in str(stop) and "nothing was changed" in str(stop)


def test_openstack_errors_are_said_in_words() -> None:
    from console.infra.openstack import _why

    assert "RuntimeError" not in _why(RuntimeError("the cloud said no"))


def test_the_tui_fallback_is_said_in_words() -> None:
    from console.tui.errors import explain

    said = explain(_max_retry())
    assert "MaxRetryError" not in said and said


# -- themes --------------------------------------------------------------------------------------------------------


def test_a_huge_theme_names_the_file_and_the_consoles_limit(tmp_path: Path) -> None:
    from console.tui.themes import ThemeError, load_file

    path = tmp_path / "huge.yaml"
    with path.open("wb") as f:
        f.write(b"name: huge\n# ")
        f.truncate(int(5.9 * 1024 * 1024))
    with pytest.raises(ThemeError) as caught:
        load_file(path)
    said = str(caught.value)
    assert str(path) in said and "theme" in said and "etcd" not in said
    assert "5.9 MiB" in said and "64 KiB" in said


def _console(tmp: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONSOLE_", "OS_"))}
    env |= {"XDG_CONFIG_HOME": str(tmp / "cfg"), "XDG_STATE_HOME": str(tmp / "state"),
            "XDG_DATA_HOME": str(tmp / "data"), "KUBECONFIG": str(tmp / "no-kubeconfig")}
    return subprocess.run([sys.executable, "-m", "console", *argv], capture_output=True, text=True, env=env,
                          timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("argv", [("get", "nodes"), ("get", "nodes", "-o", "json"), ("plan",),
                                  ("nfd", "validate", "-f", "x.yaml")])
def test_a_broken_theme_flag_is_exit_2_for_every_command(tmp_path: Path, argv: tuple[str, ...]) -> None:
    theme = tmp_path / "data" / "console" / "themes" / "broken.yaml"
    theme.parent.mkdir(parents=True)
    theme.write_bytes(b"name: broken\ncolors: [\n")
    proc = _console(tmp_path, "--theme", "broken", *argv)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(theme) in lines[0], proc.stderr
    if "json" in argv:
        import json

        assert json.loads(proc.stdout)["error"] == "bad-theme"
    else:
        assert proc.stdout == ""
