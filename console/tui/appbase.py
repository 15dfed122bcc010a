"""The App as screens see it: the context's gateways and what the App computes from them, typed.

`ConsoleApp` (console/tui/app.py) is the one; a screen declares `app: ConsoleAppBase` so `self.app.view` is
checked, without importing app.py (which imports the screens).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from textual.app import App

from console.config import Settings
from console.gateways import ClusterGateway, Gateways, VmGateway
from console.guard import Guard
from console.infra.sizes import FlavorInfo
from console.kube.events import Events
from console.kube.metrics import MetricsReader
from console.tui.messages import ClusterView

if TYPE_CHECKING:
    import threading

    from console.planner.model import Plan, PlanInput
    from console.tui.command_grammar import Command


class FleetRunbook(Protocol):
    """console.runbook.fleet.Fleet as a screen uses it: run() is blocking (a thread worker's) and calls on_event
    (FleetEvent) from its thread; it returns a FleetResult (fleet_id, status, exit_code, message, nodes, …)."""

    def run(self, on_event: Callable[[Any], object], stop: threading.Event) -> Any: ...


@dataclass(frozen=True)
class PreparedFleet:
    """A fleet run ready to be confirmed: what the confirmation shows and which nodes it touches."""

    runbook: FleetRunbook
    fleet_id: str
    nodes: tuple[str, ...]  # the nodes still to scale up, in the order the fleet runs them
    preview: str  # each node's change and its scale-up plan (what `console plan --apply` prints)
    resuming: bool = False  # an unfinished fleet run is continued (its recorded plan, not the one shown)


class FleetRefused(Exception):
    """The fleet cannot start: nothing was changed; the message says why and what to do."""


class ConsoleAppBase(App[None]):
    gateways: Gateways  # everything this context's screens talk to; a context switch replaces it whole
    clock: Callable[[], float]
    view: ClusterView  # the node table's rows and the snapshot they came from
    flavors: list[FlavorInfo]  # Nova's flavors, smallest first (none without Nova)
    api_error: str | None

    if TYPE_CHECKING:  # ConsoleApp's
        @property
        def show_vms(self) -> bool: ...
        def run_command(self, cmd: Command) -> None: ...
        def prepare_fleet(self, inp: PlanInput, plan: Plan) -> PreparedFleet: ...

    # -- the gateways of the context in use (console/gateways.py) ---------
    @property
    def kube(self) -> ClusterGateway:
        return self.gateways.cluster

    @property
    def settings(self) -> Settings:
        return self.gateways.settings

    @property
    def guard(self) -> Guard:
        """Every write the screens' stores and sessions make goes through it (console/guard.py)."""
        return self.gateways.guard

    @property
    def vms(self) -> VmGateway | None:
        """list() -> VmListing, flavors(); None hides the VM columns."""
        return self.gateways.vms

    @property
    def events(self) -> Events | None:
        return self.gateways.events

    @property
    def metrics(self) -> MetricsReader | None:
        """Usage from metrics.k8s.io, polled (absent when not served or not allowed)."""
        return self.gateways.metrics
