"""Headless packages import neither Textual nor Rich nor the TUI (STYLE.md: layout)."""

import json
import subprocess
import sys

HEADLESS = (
    "console.nfd",
    "console.discovery",
    "console.kube",
    "console.infra",
    "console.runbook",
    "console.planner",
    "console.lab",
    "console.config",
    "console.audit",
    "console.guard",
)


def test_headless_packages_do_not_load_the_ui():
    code = (
        "import importlib, json, pkgutil, sys\n"
        f"for name in {HEADLESS!r}:\n"
        "    mod = importlib.import_module(name)\n"
        "    for info in pkgutil.walk_packages(getattr(mod, '__path__', []), name + '.'):\n"
        "        importlib.import_module(info.name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')"
        " or m.startswith('console.tui'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


def test_package_import_is_light():
    out = subprocess.run(
        [sys.executable, "-c", "import console, sys; print(len(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    bare = subprocess.run(
        [sys.executable, "-c", "import sys; print(len(sys.modules))"], capture_output=True, text=True, check=True
    ).stdout
    assert int(out) - int(bare) <= 2  # console/__init__.py imports nothing heavy
