"""What the conformance tests against upstream NFD share (tests/integration/nfd_lab/test_conformance_*.py): the
console as a subprocess, the labels nfd-master owns on a node, hypothesis settings for cases that each cost a
relabel by the real master, and generated feature-file lines."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from labtools import lab_env

from console.lab.world import Lab

FNS = "feature.node.kubernetes.io"
BATCHES = 6  # hypothesis examples (batches) per release
# no shrinking: each try is a relabel by the real master; a difference is reported with its whole batch
BATCH_SETTINGS = settings(
    max_examples=BATCHES,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)


def running_lab(scenario: Any, state: Path, report: Callable[[], str]) -> Iterator[Lab]:
    """A module's lab of `scenario`; when it ends, `report()` (the module's case counts) is printed."""
    lab = Lab(scenario, state, wait_usage=False)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()
        print(report())


def api(lab: Lab) -> Any:
    from kubernetes import config

    return config.new_client_from_config(config_file=str(lab.state.kubeconfig))


def nfd_labels(node: Any) -> dict[str, str]:
    """The labels nfd-master owns on a node: those its feature-labels annotation names."""
    names = ((node.metadata.annotations or {}).get("nfd.node.kubernetes.io/feature-labels") or "").split(",")
    keys = {n if "/" in n else f"{FNS}/{n}" for n in names if n}
    return {k: v for k, v in (node.metadata.labels or {}).items() if k in keys}


def all_nfd_labels(c: Any) -> dict[str, dict[str, str]]:
    """Every node's NFD labels, by node name, through the ApiClient `c`."""
    from kubernetes import client

    return {n.metadata.name: nfd_labels(n) for n in client.CoreV1Api(c).list_node().items}


def label_diff(expected: dict[str, dict[str, str]], seen: dict[str, dict[str, str]]) -> dict[str, Any]:
    """Per node whose labels differ: what only the console predicted, what only nfd-master wrote."""
    return {
        node: {
            "console": {k: v for k, v in expected[node].items() if seen[node].get(k) != v},
            "nfd-master": {k: v for k, v in seen[node].items() if expected[node].get(k) != v},
        }
        for node in expected
        if seen.get(node) != expected[node]
    }


def console(lab: Lab, *args: str) -> tuple[int, dict[str, Any], str]:
    """`console nfd ARGS -o json` on the lab: exit code, JSON, stderr."""
    p = subprocess.run(
        [sys.executable, "-m", "console", "nfd", *args, "-o", "json"],
        env=lab_env(lab),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, json.loads(p.stdout) if p.stdout.strip() else {}, p.stderr


# feature-file and hook output lines (NFD docs/usage/customization-guide.md "Feature files", "Hooks"): plain and
# prefixed keys, values, `/`-prefixed and invalid names, comments, blank lines, and the directives of v0.14+
# (# +expiry-time) and v0.15+ (# +no-label, # +no-feature)
LINE_KEYS = (
    "rack",
    "zone.a",
    "example.com/tier",
    f"{FNS}/gpu-count",
    "sub.example.org/x_y",
    "/slash",
    "bad key",
    "UPPER-case",
    "-dash",
    "a" * 70,
)
LINE_VALUES = ("", "=1", "=true", "=r7", "=a b", "==x", "=" + "v" * 70, "=@local.rack")
DIRECTIVES = (
    "# a comment",
    "",
    "   ",
    "# +expiry-time=2099-01-01T00:00:00Z",
    "# +expiry-time=2001-01-01T00:00:00Z",
    "# +no-label",
    "# +no-feature",
    "# +unknown=1",
)


@st.composite
def feature_lines(draw: st.DrawFn) -> list[str]:
    lines = []
    for i in range(draw(st.integers(4, 12))):  # at least 4: hypothesis's first examples are its smallest
        if draw(st.integers(0, 3)) == 0:
            lines.append(draw(st.sampled_from(DIRECTIVES)))
        else:
            key = draw(st.sampled_from(LINE_KEYS))
            lines.append(f"{key}{i}{draw(st.sampled_from(LINE_VALUES))}")
    return lines


def sentinel(features_d: Path, n: int) -> Path:
    """Case n's sentinel feature file, written after the case's own file (labels_follow)."""
    path = features_d / f"zz-sentinel-{n}"
    path.write_text(f"conformance-sentinel-{n}=1\n")
    return path


def feature_file(features_d: Path, n: int, text: str) -> Callable[[], list[Path]]:
    """labels_follow's `put` for a feature file: the file, then its sentinel."""

    def put() -> list[Path]:
        path = features_d / f"conformance-{n}"
        path.write_text(text)
        return [path, sentinel(features_d, n)]

    return put


def labels_follow(
    lab: Lab, node: str, local_args: list[str], put: Callable[[], list[Path]], what: str, timeout: float = 60
) -> tuple[dict[str, str], dict[str, str]]:
    """`console nfd local LOCAL_ARGS --from-cluster` before and after `put()` writes the files nfd-worker reads on
    `node` (the case's, then a sentinel feature file of a label of its own, so the labels that match the
    prediction are from a worker pass that read the case): the node's NFD labels must become the prediction (the
    labels the local source gave before replaced by what it gives now). The files are removed after, and the
    labels must come back. Returns the node's NFD labels before and with the files."""
    from kubernetes import client

    def local() -> dict[str, str]:
        code, doc, err = console(lab, "local", *local_args, "--from-cluster")
        assert code == 0, err
        return dict(doc["labels"])

    with api(lab) as c:

        def node_labels() -> dict[str, str]:
            return nfd_labels(client.CoreV1Api(c).read_node(node))

        before_local, before = local(), node_labels()
        paths = put()
        try:
            after_local = local()
            assert set(after_local) - set(before_local), "the sentinel's label is not in the prediction"
            expected = {k: v for k, v in before.items() if k not in before_local} | after_local
            deadline, seen = time.monotonic() + timeout, {}
            while time.monotonic() < deadline:
                if (seen := node_labels()) == expected:
                    break
                time.sleep(0.3)
            assert seen == expected, (
                f"NFD {lab.scenario.nfd_version}: console and nfd-worker/master differ for\n{what}\n"
                f"console only: {set(expected.items()) - set(seen.items())}\n"
                f"nfd only: {set(seen.items()) - set(expected.items())}"
            )
        finally:
            for path in paths:
                path.unlink()
        deadline = time.monotonic() + timeout
        while node_labels() != before and time.monotonic() < deadline:
            time.sleep(0.3)
        assert node_labels() == before, "the case's labels stayed after its files were removed"
    return before, seen
