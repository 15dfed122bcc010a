"""The screenshot/snapshot harness is test code (issue 12): under tests/support, runnable as a script, and its
make_app leaves the test process's environment alone."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import screenshots

REPO = Path(__file__).resolve().parents[2]


def test_the_harness_is_not_product_code() -> None:
    assert importlib.util.find_spec("console.tui.screenshots") is None
    assert Path(screenshots.__file__).resolve() == REPO / "tests" / "support" / "screenshots.py"


def test_the_harness_runs_as_a_script() -> None:
    """`.venv/bin/python tests/support/screenshots.py` (here --help: the real run starts a lab)."""
    done = subprocess.run([sys.executable, str(REPO / "tests" / "support" / "screenshots.py"), "--help"],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "screenshots" in done.stdout and "--out" in done.stdout
    for name in ("nodes", "pending-plan", "scale-up-finished", "small-terminal"):
        assert name in done.stdout


def test_make_app_does_not_set_the_process_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """It used to point OS_CLIENT_CONFIG_FILE at the lab's clouds.yaml for the rest of the test process; now the
    lab fixture (start_lab(clouds_env=True)) or lab_environment does, restored after, and make_app says so."""
    monkeypatch.delenv("OS_CLIENT_CONFIG_FILE", raising=False)
    lab = SimpleNamespace(state=SimpleNamespace(clouds_yaml=tmp_path / "clouds.yaml"))
    before = dict(os.environ)
    with pytest.raises(RuntimeError, match="OS_CLIENT_CONFIG_FILE"):
        screenshots.make_app(lab)
    assert dict(os.environ) == before
    with screenshots.lab_environment(lab):
        assert os.environ["OS_CLIENT_CONFIG_FILE"] == str(tmp_path / "clouds.yaml")
    assert dict(os.environ) == before


def test_every_screen_has_its_sizes() -> None:
    for name in screenshots.SCREENS:
        assert screenshots.sizes(name), name
    assert screenshots.sizes("nodes") == ((80, 24), (120, 40))
    assert screenshots.sizes("small-terminal") == ((60, 20),)
    assert list(screenshots.SCREENS)[-len(screenshots.CHANGES_THE_LAB):] == list(screenshots.CHANGES_THE_LAB)
