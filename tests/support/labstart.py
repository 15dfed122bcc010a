"""Starting a lab for a module-scoped fixture: `yield from start_lab("seed-resize", tmp_path_factory.mktemp(...))`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from console.lab import scenarios
from console.lab.scenarios import Scenario
from console.lab.world import Lab


def start_lab(scenario: str | Scenario, root: Path, *, clouds_env: bool = False, **options: Any) -> Iterator[Lab]:
    """Start the lab (a scenario or its name) in `root`, yield it, and stop it however the module ends.

    `clouds_env`: while the lab runs, OS_CLIENT_CONFIG_FILE names its clouds.yaml, so openstacksdk in this
    process finds cloud "lab" (restored afterwards). `options`: Lab keyword arguments (watch_expiry=...).
    A module that reads the nodes' usage at once passes wait_usage=True: by default the lab is ready before
    metrics-server's second scrape (10-20 s), which most modules never need.
    """
    options.setdefault("wait_usage", False)
    lab = Lab(scenarios.get(scenario) if isinstance(scenario, str) else scenario, root, **options)
    old = os.environ.get("OS_CLIENT_CONFIG_FILE")
    try:
        lab.start()
        if clouds_env:
            os.environ["OS_CLIENT_CONFIG_FILE"] = str(lab.state.clouds_yaml)
        yield lab
    finally:
        lab.stop()
        if clouds_env:
            if old is None:
                os.environ.pop("OS_CLIENT_CONFIG_FILE", None)
            else:
                os.environ["OS_CLIENT_CONFIG_FILE"] = old
