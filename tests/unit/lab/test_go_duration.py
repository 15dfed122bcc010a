"""Go's time.ParseDuration as the lab reads metrics-server's window (console/lab/metricsserver.py go_duration)."""

from __future__ import annotations

import pytest

from console.lab.metricsserver import go_duration


@pytest.mark.parametrize(("text", "seconds"), [("2s", 2), ("500ms", 0.5), ("1h2m3s", 3723), ("1.5s", 1.5), ("0", 0)])
def test_go_duration(text: str, seconds: float) -> None:
    assert go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["2", "s", "2x", "1s2"])
def test_go_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        go_duration(text)
