"""The fleet-plan screen's messages (its thread workers report only through them) and its run state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message

from console.planner.model import Plan, PlanInput
from console.tui.appbase import PreparedFleet
from console.tui.screens.fleet_view import Marks


class FleetPlanned(Message):
    """The plan input read and solved (or why not); `marks` are the drops and pins it was planned with."""

    def __init__(self, inp: PlanInput | None, plan: Plan | None, marks: Marks, seq: int, error: str = "") -> None:
        super().__init__()
        self.inp, self.plan, self.marks, self.seq, self.error = inp, plan, marks, seq, error


class FleetPrepared(Message):
    """The fleet runbook built and its nodes' scale-ups planned (console/tui/appbase.PreparedFleet), or why not."""

    def __init__(self, prepared: PreparedFleet | None, plan: Plan, error: str = "") -> None:
        super().__init__()
        self.prepared, self.plan, self.error = prepared, plan, error


class FleetProgress(Message):
    """One console.runbook.fleet FleetEvent (posted from the fleet's thread)."""

    def __init__(self, event: Any) -> None:
        super().__init__()
        self.event = event


class FleetFinished(Message):
    def __init__(self, result: Any, error: str = "") -> None:
        super().__init__()
        self.result, self.error = result, error  # result: console.runbook.fleet.FleetResult


@dataclass
class FleetRun:
    running: bool = False
    fleet_id: str = ""
    started: float = 0.0
    result: Any = None
    error: str = ""
    states: dict[str, str] = field(default_factory=dict)  # node → pending | running | done | failed | attention
    statuses: dict[str, str] = field(default_factory=dict)  # node → its node run's run-done status

    @property
    def began(self) -> bool:
        return self.running or self.result is not None or bool(self.error)
