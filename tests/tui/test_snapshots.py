"""Snapshot tests of the main screens on the default lab (frozen clock, dark theme, XDG dirs in tmp).

The lab's names, sizes, labels and scheduler messages are deterministic; uids and ages are not
shown on these screens. Update after an intended change: pytest tests/tui/test_snapshots.py --snapshot-update
"""

from __future__ import annotations

from typing import Any

import pytest

from console.tui.screenshots import FROZEN_CLOCK, SCREENS, make_app

MAIN = ["nodes", "nodes-filter-avx512", "node-detail", "compare", "pending", "pending-plan", "help"]


@pytest.mark.parametrize("name", MAIN)
def test_screen_snapshot(lab: Any, snap_compare: Any, name: str) -> None:
    steps = SCREENS[name]
    lab.kube_api.metrics.clock = lambda: FROZEN_CLOCK  # the simulated usage of one scrape, in every run
    app = make_app(lab)
    try:
        assert snap_compare(app, terminal_size=(80, 24), run_before=steps)
    finally:
        app.kube.stop()
