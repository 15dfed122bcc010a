"""Regenerate screenshots/ (SVG) from the default lab: `python -m console.tui.screenshots [--out DIR]`.

Starts the embedded lab itself, opens the console headless at 80×24 and 120×40 and saves one
SVG per entry of SCREENS. Other screens add an entry: (name, async steps(pilot)).
The same steps drive the snapshot tests (tests/tui/test_snapshots.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

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


async def loaded(pilot: Any) -> None:
    """Nodes, pods, VMs and events are in and rendered."""
    app = pilot.app
    await wait_until(pilot, lambda: app.view.rows and (app.vms is None or app.servers), what="nodes and VMs")
    # a big cluster paints from the first page of nodes: wait for the whole lists
    await wait_until(pilot, lambda: not (app.kube.nodes.loading or app.kube.pods.loading), what="nodes and pods")
    await wait_until(pilot, lambda: app.view.generation[2] == app._vm_generation, what="VM columns")
    if app.events is not None:
        await wait_until(pilot, app.events.cache.synced.is_set, what="events")
    await app.workers.wait_for_complete()
    await pilot.pause()


async def _nodes(pilot: Any) -> None:
    await loaded(pilot)


async def _filter(pilot: Any) -> None:
    await loaded(pilot)
    await pilot.press("slash", *"-l feature.node.kubernetes.io/cpu-cpuid.AVX512F=true")
    await pilot.pause()


async def _node(pilot: Any) -> None:
    await loaded(pilot)
    pilot.app.screen.query_one("#nodes-table").move_to("kube-worker03")
    await pilot.press("enter")
    await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == "NodeDetailScreen")
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


async def _help(pilot: Any) -> None:
    await loaded(pilot)
    await pilot.press("question_mark")
    await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == "HelpScreen")


async def _command(pilot: Any) -> None:
    await loaded(pilot)
    await pilot.press("colon", *"pend")
    await pilot.pause()


def _via_command(command: str, screen: str) -> Steps:
    """Steps that type `:command` and wait until `screen` has loaded its data."""

    async def steps(pilot: Any) -> None:
        await loaded(pilot)
        await pilot.press("colon", *command, "enter")
        await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == screen)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause(0.5)

    return steps


# name -> steps that bring the app to that screen
SCREENS: dict[str, Steps] = {
    "nodes": _nodes,
    "nodes-filter-avx512": _filter,
    "node-detail": _node,
    "compare": _compare,
    "pending": _pending,
    "pending-plan": _plan,
    "help": _help,
    "command-bar": _command,
    "hooks": _via_command("hooks", "HooksScreen"),
    "rules": _via_command("rules", "RulesScreen"),
    "scale-up": _via_command("scale-up kube-worker01", "ScaleUpScreen"),
}


def make_app(lab: Any, clock: Callable[[], float] | None = None, **kw: Any) -> Any:
    """A ConsoleApp on a running lab, as `python -m console --lab` builds it (dark theme; frozen clock unless
    `clock` is given)."""
    from console.config import Settings
    from console.infra.inventory import vm_inventory
    from console.kube.cluster import Cluster
    from console.tui.app import ConsoleApp

    os.environ["OS_CLIENT_CONFIG_FILE"] = str(lab.state.clouds_yaml)
    vms = kw.pop("vms", None) or vm_inventory("lab", [lab.libvirt_uri])
    cluster = Cluster(str(lab.state.kubeconfig))
    cluster.start()
    settings = kw.pop("settings", None) or Settings(
        kubeconfig=str(lab.state.kubeconfig), cloud="lab", theme="dark", libvirt_uris=(lab.libvirt_uri,)
    )
    return ConsoleApp(
        cluster,
        None,
        settings,
        vms=vms,
        clock=clock or (lambda: FROZEN_CLOCK),
        label=f"lab: {lab.scenario.name}",
        **kw,
    )


async def capture(lab: Any, name: str, size: tuple[int, int], out: Path) -> Path:
    steps = SCREENS[name]
    app = make_app(lab, clock=time.time)  # real ages in pictures; tests freeze the clock
    path = out / f"{name}-{size[0]}x{size[1]}.svg"
    try:
        async with app.run_test(size=size) as pilot:
            await steps(pilot)
            await pilot.pause(0.2)
            path.write_text(app.export_screenshot(title=f"console — {name}"))
    finally:
        app.kube.stop()
    return path


async def generate(out: Path, names: list[str] | None = None) -> list[Path]:
    from console.lab import scenarios
    from console.lab.world import Lab

    out.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="console-shots-"))
    lab = Lab(scenarios.get("default"), root)
    written = []
    try:
        lab.start(progress=lambda m: print(f"lab: {m}", file=sys.stderr))
        for name in SCREENS:
            if names and name not in names:
                continue
            for size in SIZES:
                written.append(await capture(lab, name, size, out))
                print(f"wrote {written[-1]}", file=sys.stderr)
    finally:
        lab.stop()
        shutil.rmtree(root, ignore_errors=True)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m console.tui.screenshots", description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="screenshots", help="output directory (default: screenshots)")
    parser.add_argument("names", nargs="*", help=f"only these screens (of: {', '.join(SCREENS)})")
    args = parser.parse_args(argv)
    os.environ.setdefault("XDG_DATA_HOME", tempfile.mkdtemp(prefix="console-xdg-"))  # no user themes in shots
    asyncio.run(generate(Path(args.out), args.names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
