"""Snapshot tests of the screens at 80×24 and 120×40 (and the below-80×24 notice at 60×20) on the default lab,
from the harness that writes screenshots/ (tests/support/screenshots.py: the same SCREENS steps and sizes).

Frozen clock, dark theme, XDG dirs in tmp; the lab's names, sizes, labels and scheduler messages are
deterministic, uids and ages are not shown. pytest-textual-snapshot's snap_compare
(https://github.com/Textualize/pytest-textual-snapshot). Update after an intended change:
pytest tests/tui/test_snapshots.py --snapshot-update
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from labstart import start_lab

from console.lab.world import Lab
from screenshots import CHANGES_THE_LAB, SCREENS, make_app, settled, sizes

pytestmark = pytest.mark.lab

# A scale-up run, running or finished, is in screenshots/ only: its screen shows each step's real duration
# (time.monotonic in console/runbook/engine.py), the journal's path and the log's wall-clock times, none of
# which the App's frozen clock reaches, so no two runs draw the same picture. (It also changes the lab.)
CASES = [pytest.param(name, size, id=f"{name}-{size[0]}x{size[1]}")
         for name in SCREENS if name not in CHANGES_THE_LAB for size in sizes(name)]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """The default lab whose kubelets report their usage at its mean: metrics-server's rates are the same numbers
    in every run."""
    yield from start_lab("default", tmp_path_factory.mktemp("snapshots"), clouds_env=True, steady_usage=True)


@pytest.mark.parametrize(("name", "size"), CASES)
def test_screen_snapshot(lab: Any, snap_compare: Any, name: str, size: tuple[int, int]) -> None:
    app = make_app(lab)
    try:
        async def run_before(pilot: Any) -> None:
            await SCREENS[name](pilot)
            await settled(pilot)

        assert snap_compare(app, terminal_size=size, run_before=run_before)
    finally:
        app.gateways.stop()


def test_every_screen_has_a_snapshot_at_both_sizes() -> None:
    """The deliverable's list (issue 12): each screen at 80×24 and 120×40, the notice at 60×20 (a scale-up run:
    screenshots only, see CASES)."""
    cases = {(p.values[0], p.values[1]) for p in CASES}
    for name in ("nodes", "nodes-filter-avx512", "node-detail", "compare", "pending", "pending-plan", "help",
                 "command-bar", "hooks", "rules", "scale-up"):
        assert {(name, (80, 24)), (name, (120, 40))} <= cases, name
    assert ("small-terminal", (60, 20)) in cases
