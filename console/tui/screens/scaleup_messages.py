"""The scale-up screen's messages (its thread workers report only through them) and its run state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message

from console.runbook.engine import RunEvent, RunResult
from console.runbook.scaleup import ScaleUpPlan
from console.tui.widgets import runbook_data as data


class NodesListed(Message):
    def __init__(self, nodes: list[tuple[str, str]], error: str = "") -> None:
        super().__init__()
        self.nodes, self.error = nodes, error


class TargetsLoaded(Message):
    def __init__(self, info: data.NodeTargets | None, error: str = "") -> None:
        super().__init__()
        self.info, self.error = info, error


class PlanReady(Message):
    def __init__(self, plan: ScaleUpPlan | None, journal: Any, error: str = "", seq: int = 0,
                 blocked: data.DrainOverride | None = None) -> None:
        super().__init__()
        self.plan, self.journal, self.error, self.seq = plan, journal, error, seq
        self.blocked = blocked  # the drain refused pods: what overriding would mean


class RunbookStepChanged(Message):
    """One engine event (posted from the engine's thread)."""

    def __init__(self, event: RunEvent) -> None:
        super().__init__()
        self.event = event


class RunFinished(Message):
    def __init__(self, result: RunResult | None, error: str = "") -> None:
        super().__init__()
        self.result, self.error = result, error


class LiveStateReady(Message):
    def __init__(self, state: data.LiveState) -> None:
        super().__init__()
        self.state = state


class RevertChecked(Message):
    def __init__(self, possible: bool, reason: str, preview: str = "", plan: Any = None) -> None:
        super().__init__()
        self.possible, self.reason, self.preview = possible, reason, preview
        self.plan = plan  # console.runbook.revert.RevertPlan when possible


class RevertDone(Message):
    def __init__(self, ok: bool, message: str, result: RunResult | None = None) -> None:
        super().__init__()
        self.ok, self.message = ok, message
        self.result = result  # None: the revert did not start (message says why)


@dataclass
class RunState:
    running: bool = False
    run_id: str = ""
    result: RunResult | None = None
    error: str = ""
    events: list[RunEvent] = field(default_factory=list)
    started: float = 0.0
