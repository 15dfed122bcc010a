"""Benchmark: how long a lab takes to start and to stop (what every lab test module pays), and where it goes.

Starts and stops the scenario's lab in this process `--repeat` times (as the test fixtures do) and prints each
run's progress lines with the time they came, then the median start and stop.

    .venv/bin/python benchmarks/lab_start.py [--scenario default] [--repeat 3] [--no-metrics | --no-wait-usage]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import tempfile
import time
from pathlib import Path

from console.lab import scenarios
from console.lab.world import Lab


def _say(t0: float, msg: str) -> None:
    print(f"  {time.monotonic() - t0:6.2f}s {msg}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="default")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-metrics", action="store_true", help="without metrics-server (Lab(metrics=False))")
    ap.add_argument(
        "--no-wait-usage",
        action="store_true",
        help="ready once metrics-server serves, before it has the nodes' usage (Lab(wait_usage=False), as the tests)",
    )
    args = ap.parse_args()
    starts, stops = [], []
    for i in range(args.repeat):
        t0 = time.monotonic()
        lab = Lab(
            scenarios.get(args.scenario),
            Path(tempfile.mkdtemp(prefix="lab-start-")),
            metrics=not args.no_metrics,
            wait_usage=not args.no_wait_usage,
        )
        print(f"run {i + 1}:")
        try:
            lab.start(functools.partial(_say, t0))
            starts.append(time.monotonic() - t0)
        finally:
            t1 = time.monotonic()
            lab.stop()
            stops.append(time.monotonic() - t1)
        print(f"  stopped in {stops[-1]:.2f}s")
    print(
        f"{args.scenario}: start {statistics.median(starts):.1f}s, stop {statistics.median(stops):.1f}s "
        f"(median of {args.repeat})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
