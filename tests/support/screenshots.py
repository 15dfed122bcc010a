"""Regenerate screenshots/ (SVG) from the default lab: `.venv/bin/python tests/support/screenshots.py [--out DIR]`.

Starts the embedded lab itself, opens the console headless at 80×24 and 120×40 (SIZES_OF: other sizes for
some) and saves one SVG per entry of SCREENS and size. Other screens add an entry: name -> async steps(pilot).
The same steps and sizes drive the snapshot tests (tests/tui/test_snapshots.py). Test harness, not product
code: it lives under tests/ and needs the lab extra (pip install -e '.[test,lab]').
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.worker import WorkerCancelled

Steps = Callable[[Any], Awaitable[None]]
SIZES = ((80, 24), (120, 40))
FROZEN_CLOCK = 1_800_000_000.0


async def wait_until(pilot: Any, predicate: Callable[[], object], timeout: float = 20, what: str = "") -> None:
    """Poll the app (letting it process messages) until `predicate()` holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            await pilot.pause()
            return
        await pilot.pause(0.05)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what or predicate}")


async def settled(pilot: Any, timeout: float = 30, quiet: int = 3) -> None:
    """No worker running and the same picture `quiet` polls in a row: the screen has drawn what its data
    gives (a worker's message may start another worker, so waiting for the workers once is not enough)."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    last, same = None, 0
    while same < quiet:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the screen did not settle in {timeout}s")
        await app.workers.wait_for_complete()
        await pilot.pause(0.1)
        picture = app.export_screenshot()
        busy = any(w.is_running for w in app.workers)
        same = same + 1 if picture == last and not busy else 0
        last = picture


async def loaded(pilot: Any) -> None:
    """Nodes, pods, VMs and events are in and rendered."""
    app = pilot.app
    await wait_until(pilot, lambda: app.view.rows and (app.vms is None or app.servers), what="nodes and VMs")
    await wait_until(pilot, lambda: not app.loading_note, what="every cache's first list (the header's note)")
    await wait_until(pilot, lambda: app.view.generation[2] == app._vm_generation, what="VM columns")
    if app.events is not None:
        await wait_until(pilot, app.events.cache.synced.is_set, what="events")
    if app.metrics is not None:  # the first read of metrics.k8s.io is in the rows (usage or its absence)
        await wait_until(pilot, lambda: app.metrics.snapshot().state != "loading"
                         and app.view.generation[3] == app.metrics.generation, what="usage")
    for worker in list(app.workers):
        # one a newer worker of its exclusive group replaced (a VM refresh every 0.5 s, on a loaded machine) ends
        # cancelled: that is done too (app.workers.wait_for_complete raises WorkerCancelled for it)
        with contextlib.suppress(WorkerCancelled):
            await worker.wait()
    await pilot.pause()


async def _nodes(pilot: Any) -> None:
    await loaded(pilot)


async def _filter(pilot: Any) -> None:
    await loaded(pilot)
    await pilot.press("slash", *"-l feature.node.kubernetes.io/cpu-cpuid.AVX512F=true", "enter")
    await pilot.pause()  # enter: the filter applies and the table has the focus (no blinking cursor in a picture)


async def _node(pilot: Any) -> None:
    await loaded(pilot)
    pilot.app.screen.query_one("#nodes-table").move_to("kube-worker03")
    await pilot.press("enter")
    await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == "NodeDetailScreen")
    events = pilot.app.screen.events_watch
    if events is not None:
        await wait_until(pilot, events.cache.synced.is_set, what="the node's events")
    metrics = pilot.app.metrics
    if metrics is not None and metrics.snapshot().state == "live":  # the screen asks for the pods' usage
        await wait_until(pilot, lambda: metrics.snapshot().pods and pilot.app.view.generation[3] == metrics.generation,
                         what="pod usage")
    await pilot.press("l")
    await pilot.pause()


async def _compare(pilot: Any) -> None:
    await loaded(pilot)
    table = pilot.app.screen.query_one("#nodes-table")
    table.move_to("kube-worker02")
    await pilot.press("space")
    table.move_to("kube-worker03")
    await pilot.press("space", "c")
    await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == "CompareScreen")
    await pilot.press("d")
    await pilot.pause()


async def _pending(pilot: Any) -> None:
    await loaded(pilot)
    await pilot.press("p")
    await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == "PendingScreen")
    await wait_until(pilot, lambda: pilot.app.screen.advice, what="fit analysis")


async def _plan(pilot: Any) -> None:
    await _pending(pilot)
    await pilot.press("tab", "enter")
    await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == "PlanModal")


async def _plan_all(pilot: Any) -> None:
    """`P` on the Pending screen: the fleet plan for every Pending pod (issue 13)."""
    await _pending(pilot)
    await pilot.press("P")
    await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == "FleetScreen", what="the fleet screen")
    screen = pilot.app.screen
    await wait_until(pilot, lambda: not screen.planning and (screen.plan is not None or screen.plan_error), 60,
                     what="the fleet plan")


async def _help(pilot: Any) -> None:
    await loaded(pilot)
    await pilot.press("question_mark")
    await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == "HelpScreen")


async def _command(pilot: Any) -> None:
    from textual.widgets import Input

    await loaded(pilot)
    await pilot.press("colon", *"pend")
    for box in pilot.app.screen.query(Input):
        box.cursor_blink = False  # a blinking cursor would make two pictures of one screen
    await settled(pilot)  # the palette's matches arrive from its own worker


def _via_command(command: str, screen: str) -> Steps:
    """Steps that type `:command` and wait until `screen` has loaded its data."""

    async def steps(pilot: Any) -> None:
        await loaded(pilot)
        await pilot.press("colon", *command, "enter")
        await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == screen)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause(0.5)

    return steps


async def _scale_up_open(pilot: Any, node: str) -> Any:
    await loaded(pilot)
    await pilot.press("colon", *f"scale-up {node}", "enter")
    await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == "ScaleUpScreen")
    screen = pilot.app.screen
    await wait_until(pilot, lambda: screen.info is not None or screen.plan_error, 30, what="node and VM loaded")
    return screen


async def _scale_up_start(pilot: Any, node: str, flavor: str) -> Any:
    """The scale-up screen on `node`, target `flavor` picked, run confirmed (t, the flavor, enter; r, y)."""
    screen = await _scale_up_open(pilot, node)
    await pilot.press("t")
    await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == "TargetPicker", what="target picker")
    flavors = pilot.app.screen.query_one("#target-flavors")
    ids = [flavors.get_option_at_index(i).id for i in range(flavors.option_count)]
    flavors.highlighted = ids.index(flavor)
    await pilot.press("enter")
    await wait_until(pilot, lambda: screen.plan is not None or screen.plan_error, 30, what="the plan")
    await pilot.press("r")
    await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == "ConfirmDanger", what="the confirmation")
    await pilot.press("y")
    await wait_until(pilot, lambda: pilot.app.screen is screen
                     and (screen.run.running or screen.run.result is not None), what="the run started")
    return screen


async def _scale_up_running(pilot: Any) -> None:
    screen = await _scale_up_start(pilot, "kube-worker02", "m1.large")
    await wait_until(pilot, lambda: screen.run.events, what="the first step")


async def _run_ended(pilot: Any) -> None:
    """After a running picture: the run goes on to its end before the app closes (the lab stays consistent)."""
    screen = pilot.app.screen
    await wait_until(pilot, lambda: screen.run.result is not None, 180, what="the run's end")
    await pilot.app.workers.wait_for_complete()


async def _scale_up_finished(pilot: Any) -> None:
    screen = await _scale_up_start(pilot, "kube-worker01", "m1.large")
    await wait_until(pilot, lambda: screen.run.result is not None and screen.live is not None
                     and screen.live.vm_now is not None, 180, what="the run finished and the VM read back")
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


# name -> steps that bring the app to that screen (at SIZES, or SIZES_OF[name])
SCREENS: dict[str, Steps] = {
    "nodes": _nodes,
    "nodes-filter-avx512": _filter,
    "node-detail": _node,
    "compare": _compare,
    "pending": _pending,
    "pending-plan": _plan,
    "plan-all": _plan_all,
    "help": _help,
    "command-bar": _command,
    "hooks": _via_command("hooks", "HooksScreen"),
    "rules": _via_command("rules", "RulesScreen"),
    "scale-up": _via_command("scale-up kube-worker01", "ScaleUpScreen"),
    "small-terminal": _nodes,  # below 80×24: the notice of what is hidden
    # change the lab (resize VMs): last; screenshots only (real durations and times: tests/tui/test_snapshots.py)
    "scale-up-running": _scale_up_running,
    "scale-up-finished": _scale_up_finished,
}
# one real run per node and picture (a second run to the same size would find nothing to do)
SIZES_OF: dict[str, tuple[tuple[int, int], ...]] = {"small-terminal": ((60, 20),), "scale-up-running": ((80, 24),),
                                                    "scale-up-finished": ((80, 24),)}
CHANGES_THE_LAB = ("scale-up-running", "scale-up-finished")


def sizes(name: str) -> tuple[tuple[int, int], ...]:
    return SIZES_OF.get(name, SIZES)


def make_app(lab: Any, clock: Callable[[], float] | None = None, **kw: Any) -> Any:
    """A ConsoleApp on a running lab, as `python -m console --lab` builds it (dark theme; frozen clock unless
    `clock` is given). OS_CLIENT_CONFIG_FILE must name the lab's clouds.yaml already (start_lab(...,
    clouds_env=True), lab_environment): this leaves the process environment alone."""
    from console.config import Settings
    from console.gateways import Gateways
    from console.infra.inventory import vm_inventory
    from console.tui.app import ConsoleApp

    if os.environ.get("OS_CLIENT_CONFIG_FILE") != str(lab.state.clouds_yaml):
        raise RuntimeError("make_app: OS_CLIENT_CONFIG_FILE does not name the lab's clouds.yaml; start the lab "
                           "with labstart.start_lab(..., clouds_env=True) or screenshots.lab_environment")
    vms = kw.pop("vms", None) or vm_inventory("lab", [lab.libvirt_uri])
    settings = kw.pop("settings", None) or Settings(
        kubeconfig=str(lab.state.kubeconfig), cloud="lab", theme="dark", libvirt_uris=(lab.libvirt_uri,)
    )
    gateways = Gateways.connect(settings, kubeconfig=str(lab.state.kubeconfig), vms=vms,
                                label=f"lab: {lab.scenario.name}")
    gateways.start()
    return ConsoleApp(gateways, clock=clock or (lambda: FROZEN_CLOCK), **kw)


async def capture(lab: Any, name: str, size: tuple[int, int], out: Path) -> Path:
    steps = SCREENS[name]
    app = make_app(lab, clock=time.time)  # real ages in pictures; tests freeze the clock
    path = out / f"{name}-{size[0]}x{size[1]}.svg"
    try:
        async with app.run_test(size=size) as pilot:
            await steps(pilot)
            if name not in CHANGES_THE_LAB:  # a run's screen keeps counting seconds
                await settled(pilot)
            path.write_text(app.export_screenshot(title=f"console — {name}"))
            if name == "scale-up-running":
                await _run_ended(pilot)
    finally:
        app.gateways.stop()
    return path


@contextlib.contextmanager
def lab_environment(lab: Any) -> Any:
    """While inside: OS_CLIENT_CONFIG_FILE names the lab's clouds.yaml (as `. DIR/env` does), restored after."""
    old = os.environ.get("OS_CLIENT_CONFIG_FILE")
    os.environ["OS_CLIENT_CONFIG_FILE"] = str(lab.state.clouds_yaml)
    try:
        yield lab
    finally:
        if old is None:
            os.environ.pop("OS_CLIENT_CONFIG_FILE", None)
        else:
            os.environ["OS_CLIENT_CONFIG_FILE"] = old


async def generate(out: Path, names: list[str] | None = None) -> list[Path]:
    from console.lab import scenarios
    from console.lab.world import Lab

    out.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="console-shots-"))
    lab = Lab(scenarios.get("default"), root, steady_usage=True)
    written = []
    try:
        lab.start(progress=lambda m: print(f"lab: {m}", file=sys.stderr))
        with lab_environment(lab):
            for name in SCREENS:
                if names and name not in names:
                    continue
                for size in sizes(name):
                    written.append(await capture(lab, name, size, out))
                    print(f"wrote {written[-1]}", file=sys.stderr)
    finally:
        lab.stop()
        shutil.rmtree(root, ignore_errors=True)
    return written


def main(argv: list[str] | None = None) -> int:
    # the screens' names listed whole: argparse's own wrapping breaks lines at hyphens (scale-up-/finished)
    screens = textwrap.fill(", ".join(SCREENS), 100, break_on_hyphens=False, initial_indent="  ",
                            subsequent_indent="  ")
    parser = argparse.ArgumentParser(prog="tests/support/screenshots.py", description=(__doc__ or "").split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=f"screens:\n{screens}")
    parser.add_argument("--out", default="screenshots", help="output directory (default: screenshots)")
    parser.add_argument("names", nargs="*", help="only these screens (listed below)")
    args = parser.parse_args(argv)
    os.environ.setdefault("XDG_DATA_HOME", tempfile.mkdtemp(prefix="console-xdg-"))  # no user themes in shots
    asyncio.run(generate(Path(args.out), args.names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
