"""ConfirmDanger and read-only mode (the API the editors use), on a minimal app."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from console.config import Settings
from console.tui.safety import ConfirmDanger, allow_action, dangerous, is_read_only


class _App(App[None]):
    def __init__(self, read_only: bool) -> None:
        super().__init__()
        self.settings = Settings(read_only=read_only)
        self.results: list[bool] = []

    def compose(self) -> ComposeResult:
        yield Static("x")

    def ask(self) -> None:
        self.push_screen(ConfirmDanger("apply rule", "nfr/my-rule", "+ feature.node.kubernetes.io/x=true"),
                         self.results.append)


async def _answer(keys: tuple[str, ...], read_only: bool = False) -> tuple[list[bool], Any]:
    app = _App(read_only)
    async with app.run_test(size=(80, 24)) as pilot:
        app.ask()
        await pilot.pause()
        title = str(app.screen.query_one("#danger-title").render()) if not app.results else ""
        await pilot.press(*keys)
        await pilot.pause()
    return app.results, title


async def test_confirm_names_the_target_and_returns_true_on_y() -> None:
    results, title = await _answer(("y",))
    assert results == [True]
    assert "apply rule: nfr/my-rule" in title


async def test_cancel_by_n_escape_or_default_button() -> None:
    assert (await _answer(("n",)))[0] == [False]
    assert (await _answer(("escape",)))[0] == [False]
    assert (await _answer(("enter",)))[0] == [False]  # the focused default is Cancel


async def test_read_only_refuses_without_asking() -> None:
    results, _ = await _answer((), read_only=True)
    assert results == [False]


def test_dangerous_actions_are_filtered_in_read_only() -> None:
    b = dangerous(Binding("a", "apply_rule", "Apply", id="rules-apply"))
    assert b.id == "rules-apply"
    ro, rw = _App(True), _App(False)
    assert is_read_only(ro) and not is_read_only(rw)
    assert allow_action(ro, "apply_rule") is False
    assert allow_action(rw, "apply_rule") is True
    assert allow_action(ro, "filter") is True


def test_rbac_shows_a_dangerous_action_disabled_with_what_it_needs(tmp_path: Any) -> None:
    """Read-only hides (False); an action the access review refuses is shown disabled (None: Textual dims it
    in the footer and does not run it) with the reason; unknown permissions refuse nothing."""
    from console.audit import AuditLog
    from console.gateways import Gateways
    from console.guard import Guard
    from console.kube.access import Access
    from console.tui.safety import why_disabled

    dangerous(Binding("s", "scale_up_x", "Scale up", id="x-scale-up"), needs="scale-up")
    read_all = {"verbs": ["get", "list", "watch"], "apiGroups": ["*"], "resources": ["*"]}
    viewer = Access(user="viewer", rules={"": ((read_all,), True)})
    app = _App(False)
    gateways = Gateways(app.settings, None, Guard(read_only=False, audit=AuditLog(tmp_path / "audit.log")))
    app.gateways = gateways.with_access(viewer)  # type: ignore[attr-defined]
    assert allow_action(app, "scale_up_x") is None
    assert why_disabled(app, "scale_up_x").startswith("scale-up needs: ")
    why = why_disabled(app, "scale_up_x")
    assert "patch nodes" in why and "create pods/eviction" in why
    assert allow_action(app, "filter") is True
    app.gateways = gateways.with_access(Access(unknown="the API server did not say"))  # type: ignore[attr-defined]
    assert allow_action(app, "scale_up_x") is True and why_disabled(app, "scale_up_x") == ""
    app.gateways = gateways  # type: ignore[attr-defined]  # not reviewed yet: nothing refused
    assert allow_action(app, "scale_up_x") is True
    ro = _App(True)
    ro.gateways = gateways.with_access(viewer)  # type: ignore[attr-defined]
    assert allow_action(ro, "scale_up_x") is False  # read-only still hides it


async def test_a_long_target_is_shown_whole_above_and_the_buttons_are_not_cut() -> None:
    """At 80×24 the confirm button said `scale up kube-worker01 → 4 vCPU / 6Gi (flavor m1 ` (cut): the button now
    says the verb, the title above the whole target (wrapped)."""
    from screentext import region_text

    target = "kube-worker01 → 4 vCPU / 6Gi (flavor m1.large) on the OpenStack cloud production-east-2"

    class _Long(_App):
        def ask(self) -> None:
            self.push_screen(ConfirmDanger("scale up", target, "1. cordon\n2. drain"), self.results.append)

    app = _Long(False)
    async with app.run_test(size=(80, 24)) as pilot:
        app.ask()
        await pilot.pause()
        screen = app.screen
        assert region_text(app, screen.query_one("#danger-title")) == f"scale up: {target}"
        for button in ("#danger-yes", "#danger-no"):
            widget = screen.query_one(button)
            assert region_text(app, widget) == str(widget.label), button
        assert str(screen.query_one("#danger-yes").label) == "Scale up"
