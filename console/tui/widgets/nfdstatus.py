"""The one-line NFD status at the top of the hooks and rules screens.

"NFD v0.16.4 in gpu-operator · master -extra-label-ns=nvidia.com · hooks enabled · relabel every 60s"
(NfdDeployment.status_line). The widget asks the App's gateways (`Gateways.nfd_deployment()`, cached there for a
short while, so opening a screen twice discovers once) in a thread worker and shows the answer it receives as
an `NfdStatusLoaded` message; the message bubbles on to the screen, which may use the deployment it carries.
"""

from __future__ import annotations

from typing import Any

from textual import work
from textual.message import Message
from textual.widgets import Static

LOOKING = "NFD: looking for nfd-master and nfd-worker in the cluster…"
NO_CLUSTER = "NFD: no cluster connection — previews model the version set in the settings (nfd_version)"
NOT_FOUND = ("NFD: not deployed in this cluster (no nfd-master / nfd-worker in any namespace) — previews still "
             "work on local files")


class NfdStatusLoaded(Message):
    """What discovery found: the line to show, the NfdDeployment (None: none, or it failed) and the error."""

    def __init__(self, text: str, deployment: Any = None, error: str = "") -> None:
        super().__init__()
        self.text, self.deployment, self.error = text, deployment, error


class NfdStatusLine(Static):
    DEFAULT_CSS = """
    NfdStatusLine { height: 1; padding: 0 1; background: $panel; color: $foreground; text-wrap: nowrap;
                    text-overflow: ellipsis; }
    """

    def __init__(self, gateways: Any = None, **kwargs: Any) -> None:
        super().__init__(LOOKING, markup=False, **kwargs)
        self.gateways = gateways
        self.deployment: Any = None

    def on_mount(self) -> None:
        gateways = self.gateways or getattr(self.app, "gateways", None)
        if gateways is None:
            self.post_message(NfdStatusLoaded(NO_CLUSTER))
            return
        self._discover(gateways)

    @work(thread=True, exclusive=True, group="nfd-status", exit_on_error=False)
    def _discover(self, gateways: Any) -> None:
        from console.faults import classify, describe
        from console.kube.nfddiscovery import NfdDiscoveryError

        try:
            found = gateways.nfd_deployment()
        except Exception as e:  # any failure is shown on the line, never a crashed worker
            fault = None if isinstance(e, NfdDiscoveryError) and e.missing else classify(e)
            why = f"cannot find NFD: {fault.message}" if fault is not None else (
                str(e) if isinstance(e, NfdDiscoveryError) else f"discovery failed ({describe(e)})")
            self.post_message(NfdStatusLoaded(f"NFD: {why}", None, why))
            return
        self.post_message(NfdStatusLoaded(found.status_line() if found is not None else NOT_FOUND, found))

    def on_nfd_status_loaded(self, message: NfdStatusLoaded) -> None:
        self.deployment = message.deployment
        self.update(message.text)
