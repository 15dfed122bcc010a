"""Issue 12, the nodes slice, against one default lab (libvirt's test driver: no QEMU guests) with the real
clients: what the nodes table says when it has no row, how it lays out at 60×20 / 80×24 / 120×40, `:ctx` and
`:theme` with a wrong name, and every theme drawing every surface. Each test failed before its fix."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from labstart import start_lab
from tuitools import running

from console.config import Settings
from console.tui.themes import load_themes
from screenshots import wait_until


@pytest.fixture(scope="module")
def kube_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The default lab on libvirt's test driver (no QEMU guests), OS_CLIENT_CONFIG_FILE naming its clouds.yaml
    (the console opened as `--lab` opens it: screenshots.make_app)."""
    yield from start_lab("default", tmp_path_factory.mktemp("layout-lab"), clouds_env=True, libvirt="test")


def lines(app: Any) -> list[str]:
    """The screen as a user reads it: one string per terminal line."""
    return ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]


def table_line(app: Any, n: int) -> str:
    return "".join(seg.text for seg in app.screen.query_one("#nodes-table").render_line(n)).rstrip()


def toasts(app: Any) -> list[str]:
    return [n.message for n in app._notifications]


async def test_a_filter_matching_nothing_or_unreadable_says_so_and_ctx_nosuch_says_one_line(kube_lab: Any) -> None:
    """Before: both filters left the table saying `Loading nodes…` (the invalid one kept the previous rows);
    `:ctx nosuch` (below) gave the kubernetes library's message."""
    async with running(kube_lab) as pilot:
        app = pilot.app
        table = app.screen.query_one("#nodes-table")
        await pilot.press("slash", *"zzz")
        await pilot.pause()
        assert table.keys == [] and table_line(app, 1) == "no nodes match 'zzz' (5 nodes; esc clears the filter)"
        await pilot.press("escape")
        assert len(table.keys) == 5
        await pilot.press("slash", *"-l foo=bar=baz,,(")
        await pilot.pause()
        assert table.keys == []
        assert table_line(app, 1) == "invalid filter '-l foo=bar=baz,,(': 'foo=bar=baz': expected key=value"
        assert "Loading" not in "".join(lines(app))
        await pilot.press("escape")
        # `:ctx nosuch` — before: the library's `Invalid kube-config file. Expected object with name nosuch in
        # …/contexts list`, after a `connecting to context nosuch…` toast
        before = len(toasts(app))
        await pilot.press("colon", *"ctx nosuch", "enter")
        await wait_until(pilot, lambda: len(toasts(app)) > before, what="the answer")
        await app.workers.wait_for_complete()
        await pilot.pause()
        new = toasts(app)[before:]
        names = ", ".join(c["name"] for c in yaml.safe_load(kube_lab.state.kubeconfig.read_text())["contexts"])
        assert new == [f'no context "nosuch" in {kube_lab.state.kubeconfig}; contexts: {names}'], new
        assert type(app.screen).__name__ == "NodesScreen" and app.kube.target.context != "nosuch"


async def test_at_80x24_the_table_says_which_columns_it_hides_and_w_shows_them(kube_lab: Any) -> None:
    """Before: PODS, NFD, ROLES and VERSION vanished at 80 columns without a word, and only a wider terminal
    showed them."""
    async with running(kube_lab) as pilot:
        app = pilot.app
        table = app.screen.query_one("#nodes-table")
        assert [c.key for c in table.hidden_columns] == ["pods", "nfd", "roles", "version"]  # the stated order
        bottom = table_line(app, table.scrollable_content_region.height - 1)
        assert bottom == "+4 columns: widen or press w"
        assert bottom in "\n".join(lines(app))
        await pilot.press("w")
        assert table.wide and [c.key for c in table.visible_columns][-3:] == ["roles", "version", "vm"]
        await pilot.press(*["right"] * 40)
        assert "control-plane,master" in "\n".join(lines(app))  # ROLES, scrolled into view
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "HelpScreen")
        assert "table-wide" in str(app.screen.query_one("#help-text").render())


async def test_at_120x40_every_column_shows_and_roles_and_names_are_whole(kube_lab: Any) -> None:
    """Before: at 120 columns the capacity/cores formats left no room for ROLES (cut to `control-plan…` or
    dropped) and cut `kube-controlplane01`; now all columns fit and the name column takes the leftover."""
    async with running(kube_lab, size=(120, 40)) as pilot:
        app = pilot.app
        table = app.screen.query_one("#nodes-table")
        assert not table.hidden_columns and table.note == ""
        row = next(ln for ln in lines(app) if ln.startswith("kube-controlplane01 "))
        assert " control-plane,master " in row  # as kubectl get nodes shows it
        assert "+" not in table_line(app, table.scrollable_content_region.height - 1)


async def test_below_80x24_the_header_says_so_on_every_screen(kube_lab: Any) -> None:
    """Before: at 60×20 columns disappeared with no notice."""
    notice = "60×20 < 80×24: columns, panels hidden"
    async with running(kube_lab, size=(60, 20)) as pilot:
        app = pilot.app
        assert app.title == notice
        assert notice in lines(app)[0]  # read whole at 60 columns, not cut
        await pilot.press("p")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "PendingScreen")
        assert notice in lines(app)[0]
        await pilot.resize_terminal(80, 24)
        await wait_until(pilot, lambda: app.title == "console", what="the notice gone at 80×24")
        assert "80×24" not in lines(app)[0]


async def test_theme_with_an_unknown_name_says_what_theme_nosuch_says(kube_lab: Any) -> None:
    """Before: `:theme nosuch` listed Textual's 25 built-in themes in a toast covering half the screen, while
    `--theme nosuch` listed the console's three."""
    settings = Settings(kubeconfig=str(kube_lab.state.kubeconfig), cloud="lab", theme="nosuch",
                        libvirt_uris=(kube_lab.libvirt_uri,))
    async with running(kube_lab, settings=settings) as pilot:
        app = pilot.app
        flag = next(m for m in toasts(app) if "nosuch" in m)
        await pilot.press("colon", *"theme nosuch", "enter")
        await pilot.pause()
        command = [m for m in toasts(app) if "nosuch" in m][-1]
        names = ", ".join(sorted(load_themes().themes))
        assert command == f"theme 'nosuch' not found; themes: {names}"
        assert flag == f"{command}; using dark"
        assert "textual-dark" not in command


def unstyled(app: Any) -> list[tuple[int, str]]:
    """(line, text) of every segment drawn on the terminal's default background (no bgcolor: ESC[49m)."""
    return [(y, seg.text) for y, strip in enumerate(app.screen._compositor.render_strips()) for seg in strip
            if seg.style is None or seg.style.bgcolor is None]


async def test_every_theme_draws_every_surface(kube_lab: Any) -> None:
    """Before: with --theme light the table header (and plain rows) went out without a background, dark on a
    dark terminal. Every console theme, on the nodes table, an empty filter result, help, Pending, compare and
    node detail."""
    async with running(kube_lab) as pilot:
        app = pilot.app
        for theme in sorted(load_themes().themes):
            app.theme = theme
            await pilot.pause()
            assert unstyled(app) == [], (theme, "nodes")
            await pilot.press("slash", *"zzz")
            await pilot.pause()
            assert unstyled(app) == [], (theme, "no match")
            await pilot.press("escape", "question_mark")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "HelpScreen")
            assert unstyled(app) == [], (theme, "help")
            await pilot.press("escape", "p")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "PendingScreen")
            assert unstyled(app) == [], (theme, "pending")
            await pilot.press("escape")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "NodesScreen")
            await pilot.press("escape", "space", "space", "c")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "CompareScreen")
            assert unstyled(app) == [], (theme, "compare")
            await pilot.press("escape", "escape", "enter")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "NodeDetailScreen")
            assert unstyled(app) == [], (theme, "node detail")
            await pilot.press("escape")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "NodesScreen")
            app.screen.query_one("#nodes-table").marked.clear()


async def test_the_vm_markers_are_explained_under_the_table_where_they_show(kube_lab: Any) -> None:
    """Before: `!` after a flavor had no legend at 80×24 (only at the end of a status line cut well before it).
    A kubelet reporting fewer CPUs than its VM runs (patched with the real client, as a kubelet whose hot-added
    vCPUs are offline would report) gets `!` in the VM column and `VM ! kubelet stale` on the note line.
    The lab's kubelet rewrites its status every 10 s, as a real one does: patched again until the screen shows it."""
    import time

    from kubernetes import client, config

    api = client.CoreV1Api(config.new_client_from_config(str(kube_lab.state.kubeconfig)))
    node = "kube-worker04"
    before = api.read_node(node).status.capacity["cpu"]
    async with running(kube_lab) as pilot:
        app = pilot.app
        table = app.screen.query_one("#nodes-table")
        assert "kubelet stale" not in table.note
        seen: list[str] = []
        patched = [0.0]

        def stale_on_screen() -> bool:
            if "kubelet stale" in table.note:
                seen[:] = lines(app)  # the screen at that moment (the next status beat reverts it)
                return True
            if time.monotonic() - patched[0] > 1:
                api.patch_node_status(node, {"status": {"capacity": {"cpu": "2"}}})
                patched[0] = time.monotonic()
            return False

        try:
            await wait_until(pilot, stale_on_screen, what="the stale marker's legend")
            row = next(ln for ln in seen if ln.startswith(node))
            assert row.rstrip().endswith("!")
            assert "VM ! kubelet stale" in "\n".join(seen)  # on screen at 80×24, under the rows
        finally:
            api.patch_node_status(node, {"status": {"capacity": {"cpu": before}}})


async def test_at_120x40_compare_shows_long_label_values_whole(kube_lab: Any) -> None:
    """Before: the LABEL column took all the width left over and values were cut at 14 (`6.8.0-57-gene…`)."""
    async with running(kube_lab, size=(120, 40)) as pilot:
        app = pilot.app
        table = app.screen.query_one("#nodes-table")
        table.move_to("kube-worker03")
        await pilot.press("space", "space", "c")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "CompareScreen")
        labels = app.view.snapshot.nodes["kube-worker03"].labels
        full = labels["feature.node.kubernetes.io/kernel-version.full"]
        assert len(full) > 14
        compare = app.screen.query_one("#compare-table")
        compare.move_to("feature.node.kubernetes.io/kernel-version.full")
        await pilot.pause()
        row = next(ln for ln in lines(app) if "kernel-version.full" in ln)
        assert row.count(full) == 2 and "…" not in row, row
