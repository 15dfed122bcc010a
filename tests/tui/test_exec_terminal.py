"""An exec plugin that needs the terminal never runs under the TUI (issue 10, deliverable 2).

While a Textual App holds the terminal, interactive plugins (client-go exec.go: interactiveMode Always, or
IfAvailable with stdin a terminal) go through the App: with App.suspend() on a terminal driver; on a driver
that cannot suspend (the pilot's headless one, a web driver) they are refused with a clear error and never
started — their prompt would land in the middle of the screen.
"""

from __future__ import annotations

import asyncio
import io
import sys
from pathlib import Path

import pytest
import yaml
from textual.app import App

from console.cli_tui import suspended_runner
from console.kube.connection import connect
from console.kube.execauth import ExecPluginError, terminal_owner


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _kubeconfig(tmp_path: Path, marker: Path) -> Path:
    script = tmp_path / "plugin"
    script.write_text(f"""#!{sys.executable}
import json
open({str(marker)!r}, 'w').write('ran')
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {{"token": "t"}}}}))
""")
    script.chmod(0o700)
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "x",
           "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
           "users": [{"name": "u", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                                     "command": str(script), "interactiveMode": "Always"}}}],
           "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


async def test_interactive_plugin_is_never_started_under_a_running_app(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", _Tty())  # as in a terminal: the plugin would prompt
    marker = tmp_path / "ran"
    kubeconfig = _kubeconfig(tmp_path, marker)
    app = App()
    async with app.run_test():
        # a worker thread connecting (a context switch) while the App draws: refused, never started
        with terminal_owner(suspended_runner(app)), pytest.raises(ExecPluginError, match="cannot hand it over"):
            await asyncio.to_thread(connect, str(kubeconfig))
    assert not marker.exists()
    with terminal_owner(suspended_runner(app)):  # the App has exited: the terminal is free again
        api, _ = connect(str(kubeconfig))
    assert marker.read_text() == "ran" and api.configuration.get_api_key_with_prefix("BearerToken") == "Bearer t"
