"""The Pending screen and its plan modal at 80×24 and 120×40 (issue 12), on the default lab (real clients)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from screentext import region_text, screen_text

from screenshots import loaded, make_app, wait_until


@asynccontextmanager
async def pending_screen(lab: Any, size: tuple[int, int] = (80, 24)) -> AsyncIterator[Any]:
    app = make_app(lab)
    try:
        async with app.run_test(size=size) as pilot:
            await loaded(pilot)
            await pilot.press("p")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "PendingScreen", what="the Pending screen")
            await wait_until(pilot, lambda: app.screen.advice, what="fit analysis")
            yield pilot
    finally:
        app.gateways.stop()


async def test_enter_on_a_node_shows_the_plan_whole_and_s_there_opens_the_runbook(lab: Any) -> None:
    """Enter and `s` agree: the plan modal offers the scale-up `s` runs (no "not available in this build"),
    and its text wraps inside the box instead of being cut."""
    async with pending_screen(lab) as pilot:
        app = pilot.app
        await pilot.press("tab")
        node = app.screen.fit_table.cursor_key
        await pilot.press("enter")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "PlanModal", what="the plan modal")
        await pilot.pause()
        shown = screen_text(app)
        assert "not available in this build" not in shown
        note = app.screen.query_one("#plan-next")
        assert region_text(app, note) == " ".join(str(note.content).split())  # every word on screen
        assert f"s: scale up {node}" in str(note.content)
        await pilot.press("s")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "ScaleUpScreen", what="the scale-up screen")
        assert app.screen.node == node and app.screen.pod == "default/nginx"
        await pilot.press("escape")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "PendingScreen", what="back on Pending")
        await pilot.press("enter")  # enter twice: the plan, then its focused Scale up button
        await wait_until(pilot, lambda: type(app.screen).__name__ == "PlanModal", what="the plan modal")
        await pilot.press("enter")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "ScaleUpScreen", what="the scale-up screen")
        await app.workers.wait_for_complete()


async def test_at_120x40_the_pod_column_fits_its_content_and_why_gets_the_width(lab: Any) -> None:
    """POD sized to its content (not ~65 columns), WHY (Column(flex=True)) reads on: the FailedScheduling message
    shows to the edge instead of `1 node(s) had …`."""
    async with pending_screen(lab, (120, 40)) as pilot:
        app = pilot.app
        table = app.screen.pods_table
        await wait_until(pilot, lambda: "Insufficient" in str(table.cells[0][3]) if table.cells else False,
                         what="the FailedScheduling message")
        await pilot.pause()
        lines = screen_text(app).splitlines()
        top = table.content_region.y
        header, row = lines[top], lines[top + 1]
        assert header.index("CPU") <= len("default/nginx") + 8, header
        why = str(table.cells[0][3])
        shown = row[header.index("WHY"):].rstrip(" ▁▇█…")
        assert len(shown) >= 80 and why.startswith(shown.rstrip("…")), (shown, why)


async def test_read_only_the_plan_says_so_and_offers_no_scale_up(lab: Any) -> None:
    """The same answer as `s` on the Pending screen in read-only mode: the plan only, and why."""
    from console.config import Settings

    settings = Settings(kubeconfig=str(lab.state.kubeconfig), cloud="lab", read_only=True,
                        libvirt_uris=(lab.libvirt_uri,))
    app = make_app(lab, settings=settings)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await loaded(pilot)
            await pilot.press("p")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "PendingScreen", what="the Pending screen")
            await wait_until(pilot, lambda: app.screen.advice, what="fit analysis")
            await pilot.press("tab", "enter")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "PlanModal", what="the plan modal")
            modal = app.screen
            assert "read-only mode: scale-up is disabled" in region_text(app, modal.query_one("#plan-next"))
            assert not modal.query("#plan-scale-up-button")
            await pilot.press("s")
            await pilot.pause()
            assert app.screen is modal
            await pilot.press("enter")  # the focused Close
            await wait_until(pilot, lambda: type(app.screen).__name__ == "PendingScreen", what="closed")
    finally:
        app.gateways.stop()
