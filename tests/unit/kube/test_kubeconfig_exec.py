"""Pure parts of connecting: the kubeconfig merge rules, exec plugins' interactive modes, token refresh.

Sources: k8s.io/client-go tools/clientcmd/loader.go (first file to set a map key wins; current-context from the
first file that sets it; missing $KUBECONFIG files skipped; relative paths against the defining file) and
plugin/pkg/client/auth/exec/exec.go (interactiveMode Never/IfAvailable/Always; stdin only when interactive;
"exec plugin cannot support interactive mode: standard input is not a terminal"; ExecCredential
status.token / expirationTimestamp).
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from console.cli_tui import suspended_runner
from console.config import kubeconfig_current_context
from console.kube.connection import Credentials, connect, contexts
from console.kube.execauth import ExecPluginError, terminal_owner
from console.kube.kubeconfig import KubeConfigError, describe, load


def _config(path: Path, *, clusters: dict[str, str] = {}, users: dict[str, dict] = {},  # noqa: B006
            contexts_: dict[str, tuple[str, str]] = {}, current: str | None = None) -> Path:  # noqa: B006
    doc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": n, "cluster": {"server": s}} for n, s in clusters.items()],
        "users": [{"name": n, "user": u} for n, u in users.items()],
        "contexts": [{"name": n, "context": {"cluster": c, "user": u}} for n, (c, u) in contexts_.items()],
    }
    if current is not None:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def kubeconfig_env(monkeypatch: pytest.MonkeyPatch) -> Callable[[list[Path]], None]:
    def set_files(paths: list[Path]) -> None:
        monkeypatch.setenv("KUBECONFIG", os.pathsep.join(str(p) for p in paths))

    return set_files


def test_merge_first_file_wins_and_current_context_from_the_first_that_sets_it(
        tmp_path: Path, kubeconfig_env: Callable[[list[Path]], None]) -> None:
    a = _config(tmp_path / "a", clusters={"c": "https://a.example:6443"}, users={"u": {"token": "ta"}},
                contexts_={"one": ("c", "u")}, current="")
    b = _config(tmp_path / "b", clusters={"c": "https://b.example:6443", "d": "https://d.example:6443"},
                users={"u": {"token": "tb"}}, contexts_={"two": ("d", "u"), "one": ("d", "u")}, current="two")
    c = _config(tmp_path / "c", contexts_={"three": ("c", "u")}, current="three")
    (tmp_path / "empty").write_text("")
    kubeconfig_env([tmp_path / "missing", a, tmp_path / "empty", b, a, c])
    merged = load()
    assert merged is not None
    assert merged.files == (str(a), str(tmp_path / "empty"), str(b), str(c))  # missing skipped, duplicate once
    assert merged.current_context == "two"  # a's empty one does not count; c's comes after b's
    assert contexts() == (["one", "two", "three"], "two")
    assert kubeconfig_current_context(None, os.environ) == "two"  # the settings' per-context block agrees
    assert merged.entry("clusters", "c").value["cluster"]["server"] == "https://a.example:6443"
    assert merged.entry("contexts", "one").value["context"]["cluster"] == "c"  # a's context, not b's
    view = describe(None)
    assert (view["context"], view["cluster"], view["user"], view["server"], view["kubeconfig"], view["auth"]) == (
        "two", "d", "u", "https://d.example:6443", str(b), "token")
    _, target = connect(None, "one")
    assert target.server == "https://a.example:6443" and target.kubeconfig == "" and target.user == "u"


def test_explicit_kubeconfig_is_that_file_alone(tmp_path: Path, kubeconfig_env: Callable[[list[Path]], None]) -> None:
    a = _config(tmp_path / "a", clusters={"c": "https://a.example"}, users={"u": {}}, contexts_={"one": ("c", "u")})
    b = _config(tmp_path / "b", clusters={"c": "https://b.example"}, users={"u": {}}, contexts_={"two": ("c", "u")},
                current="two")
    kubeconfig_env([a, b])
    assert contexts(str(b)) == (["two"], "two")
    with pytest.raises(KubeConfigError, match="sets no current-context"):
        connect(str(a))
    with pytest.raises(KubeConfigError, match="no kubeconfig at"):
        connect(str(tmp_path / "nope"))


def test_relative_token_file_resolves_against_the_file_that_defines_the_user(
        tmp_path: Path, kubeconfig_env: Callable[[list[Path]], None]) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "tok").write_text("from-sub")
    a = _config(tmp_path / "a", clusters={"c": "https://127.0.0.1:9"}, contexts_={"one": ("c", "u")}, current="one")
    b = _config(tmp_path / "sub" / "b", users={"u": {"tokenFile": "tok"}})
    kubeconfig_env([a, b])
    api, _ = connect()
    assert api.configuration.get_api_key_with_prefix("BearerToken") == "Bearer from-sub"


def _plugin(tmp_path: Path, mode: str | None, body: str = "") -> dict[str, Any]:
    """An exec plugin that records its KUBERNETES_EXEC_INFO and prints a token valid for an hour."""
    script = tmp_path / "plugin"
    script.write_text(f"""#!{sys.executable}
import json, os, sys
open({str(tmp_path / 'info')!r}, 'a').write(os.environ['KUBERNETES_EXEC_INFO'] + '\\n')
{body}
json.dump({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
           "status": {{"token": "tok", "expirationTimestamp": "2099-01-01T00:00:00Z"}}}}, sys.stdout)
""")
    script.chmod(0o700)
    exec_ = {"apiVersion": "client.authentication.k8s.io/v1", "command": str(script)}
    if mode:
        exec_["interactiveMode"] = mode
    return exec_


def _connect_with(tmp_path: Path, exec_: dict[str, Any], **kw: Any) -> Any:
    path = _config(tmp_path / "kc", clusters={"c": "https://127.0.0.1:9"}, users={"u": {"exec": exec_}},
                   contexts_={"x": ("c", "u")}, current="x")
    return connect(str(path), **kw)


def _infos(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "info").read_text().splitlines()]


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_always_without_a_terminal_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO())
    with pytest.raises(ExecPluginError, match=r"needs a terminal \(interactiveMode: Always\) and standard input"):
        _connect_with(tmp_path, _plugin(tmp_path, "Always"))
    assert not (tmp_path / "info").exists()  # never started


def test_never_runs_without_the_terminal_even_when_there_is_one(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", _Tty())
    used: list[bool] = []
    with terminal_owner(lambda fn: used.append(True) or fn()):
        api, _ = _connect_with(tmp_path, _plugin(tmp_path, "Never", "assert sys.stdin.read() == ''"))
    assert api.configuration.get_api_key_with_prefix("BearerToken") == "Bearer tok"
    assert used == [] and _infos(tmp_path)[0]["spec"] == {"interactive": False}


def test_an_interactive_plugin_runs_only_through_the_terminal_owner(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """IfAvailable with a terminal (and Always) run inside the runner the TUI registers (App.suspend), never
    beside it; the plugin is told spec.interactive = true."""
    monkeypatch.setattr(sys, "stdin", _Tty())
    inside = threading.Event()
    runs: list[int] = []

    def runner(fn: Callable[[], Any]) -> Any:
        inside.set()
        try:
            result = fn()
            runs.append(len(_infos(tmp_path)))  # the plugin ran while the runner held the terminal
            return result
        finally:
            inside.clear()

    with terminal_owner(runner):
        for mode in ("IfAvailable", "Always", None):  # None: v1beta1's default, IfAvailable
            _connect_with(tmp_path, _plugin(tmp_path, mode))
    assert runs == [1, 2, 3]
    assert [i["spec"]["interactive"] for i in _infos(tmp_path)] == [True, True, True]


def test_a_plugin_with_the_terminal_is_never_cut_only_said_to_be_still_running(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """exec_plugin_timeout bounds runs without the terminal (issue 20, point 4); one that has it may be a login
    in progress, which client-go decided never to cut (kubernetes/kubernetes#108849): past the bound one line
    says which plugin still runs and how to stop it, and its credential is used when it comes."""
    monkeypatch.setattr(sys, "stdin", _Tty())
    api, _ = _connect_with(tmp_path, _plugin(tmp_path, "Always", "import time; time.sleep(1.0)"), exec_timeout=0.2)
    assert api.configuration.get_api_key_with_prefix("BearerToken") == "Bearer tok"
    err = capsys.readouterr().err
    assert f"the exec plugin {tmp_path / 'plugin'} of user u is still running after 0.2s" in err
    assert "Ctrl-C stops it" in err


def test_plugin_failures_name_the_plugin(tmp_path: Path) -> None:
    with pytest.raises(ExecPluginError, match=r"plugin .*plugin of user u exited 3: please log in"):
        _connect_with(tmp_path, _plugin(tmp_path, "Never", "print('please log in', file=sys.stderr); sys.exit(3)"))
    with pytest.raises(ExecPluginError, match="printed no valid ExecCredential"):
        _connect_with(tmp_path, _plugin(tmp_path, "Never", "print('not json'); sys.exit(0)"))
    with pytest.raises(ExecPluginError, match="cannot run the exec plugin"):
        _connect_with(tmp_path, {"apiVersion": "client.authentication.k8s.io/v1", "command": "/nonexistent/x",
                                 "interactiveMode": "Never"})


def test_credentials_refresh_before_expiry_and_on_demand(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr("console.kube.connection.time.time", lambda: now[0])
    fetched: list[float] = []

    def fetch() -> tuple[str | None, float | None]:
        fetched.append(now[0])
        return f"Bearer t{len(fetched)}", now[0] + 100

    creds = Credentials("u", fetch, "Bearer t0", 1100.0)
    assert creds.header() == "Bearer t0" and fetched == []
    now[0] = 1079.0
    assert creds.header() == "Bearer t0"  # 21 s left of 100: not yet
    now[0] = 1081.0
    assert creds.header() == "Bearer t1"  # inside the last fifth: fetched again before the expiry
    assert creds.header(force=True) == "Bearer t2"  # after a 401
    assert Credentials("u", fetch, "Bearer static", None).header() == "Bearer static" and len(fetched) == 2

    def failing() -> tuple[str | None, float | None]:
        fetched.append(now[0])
        raise ExecPluginError("login needed")

    creds = Credentials("u", failing, "Bearer old", now[0] + 100)
    now[0] += 90
    assert creds.header() == "Bearer old"  # the refresh failed before the expiry: the old token still serves
    assert creds.header() == "Bearer old" and len(fetched) == 3  # not retried on every request
    now[0] += 11
    with pytest.raises(ExecPluginError, match="login needed"):
        creds.header()  # expired: the failure is the answer
    with pytest.raises(ExecPluginError):
        Credentials("u", failing, "Bearer x", None).header(force=True)  # after a 401


class _FakeApp:
    """What suspended_runner uses of a Textual App: is_running, call_from_thread, suspend."""

    def __init__(self) -> None:
        self.is_running = True
        self.suspended = False
        self.calls = 0

    @contextmanager
    def suspend(self) -> Iterator[None]:
        self.suspended = True
        try:
            yield
        finally:
            self.suspended = False

    def call_from_thread(self, callback: Callable[..., Any], *args: Any) -> Any:
        self.calls += 1
        return callback(*args)


def test_the_tui_runner_suspends_the_app_around_the_plugin() -> None:
    app = _FakeApp()
    runner = suspended_runner(app)
    seen: list[tuple[str, bool]] = []
    worker = threading.Thread(target=lambda: seen.append(("worker", runner(lambda: app.suspended))))
    worker.start()
    worker.join(30)
    seen.append(("loop", runner(lambda: app.suspended)))  # on the App's own thread: suspended in place
    app.is_running = False
    seen.append(("stopped", runner(lambda: app.suspended)))  # before run / after exit: the terminal is free
    assert seen == [("worker", True), ("loop", True), ("stopped", False)] and app.calls == 1


def test_client_certificates_as_data_and_as_files(tmp_path: Path, kubeconfig_env: Callable[[list[Path]], None]) -> None:
    """client-certificate(-data) / client-key(-data), read by kubernetes-python's loader: data is written to a
    temporary file for urllib3, a relative file resolves against the kubeconfig that names it."""
    import base64

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.crt").write_text("CERT-FILE")
    (tmp_path / "sub" / "c.key").write_text("KEY-FILE")
    b64 = lambda t: base64.b64encode(t.encode()).decode()  # noqa: E731
    a = _config(tmp_path / "a", clusters={"c": "https://127.0.0.1:9"},
                users={"data": {"client-certificate-data": b64("CERT-DATA"), "client-key-data": b64("KEY-DATA")}},
                contexts_={"d": ("c", "data"), "f": ("c", "file")}, current="d")
    b = _config(tmp_path / "sub" / "b", users={"file": {"client-certificate": "c.crt", "client-key": "c.key"}})
    kubeconfig_env([a, b])
    api, _ = connect()
    assert Path(api.configuration.cert_file).read_text() == "CERT-DATA"
    assert Path(api.configuration.key_file).read_text() == "KEY-DATA"
    api, _ = connect(None, "f")
    assert (api.configuration.cert_file, api.configuration.key_file) == (str(tmp_path / "sub" / "c.crt"),
                                                                         str(tmp_path / "sub" / "c.key"))
