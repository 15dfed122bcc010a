"""Conformance of `console nfd local` with upstream NFD's hooks (issue 22 deliverable 4): the releases the lab
builds that run hooks, v0.9.0 (on by default, field report 1) and v0.16.6 (the last with hooks, on with
sources.local.hooksEnabled in nfd-worker.conf, which the lab's ConfigMap sets here).

Generated hooks (hypothesis: shell scripts printing plain and prefixed keys, values, invalid names, comments and
directives, some writing to stderr, some exiting 1, some not executable) go into kube-worker01's source.d, which
the real nfd-worker runs in the node's sandbox; `console nfd local --hooks-dir --features-dir --from-cluster`
runs them here and predicts the node's labels before and after; the real nfd-master must then write exactly those.
The hooks screen's per-node preview (console/nfd_preview.preview_file with the cluster's master configuration, as
console/tui/screens/hooks.py run_node_previews calls it) must name exactly the labels an executable hook added.
On v0.9.0 generated feature files too (no directives there: its parser knows none), the newer releases' are in
test_conformance_real_nfd.py. The scenario's own hooks and feature files are left out: a hook that reads the
node's /proc would say something else here.
"""

from __future__ import annotations

import dataclasses
import itertools
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from nfdconformance import (
    BATCH_SETTINGS,
    BATCHES,
    api,
    feature_file,
    feature_lines,
    labels_follow,
    running_lab,
    sentinel,
)

from console.kube.nfddiscovery import discover_nfd
from console.lab import scenarios
from console.lab.guestroot import NFD_FEATURES_D, NFD_SOURCE_D
from console.lab.world import Lab
from console.nfd_preview import preview_file

pytestmark = pytest.mark.lab

NODE = "kube-worker01"
HOOKS: dict[str, int] = {}
HOOK_LINES: dict[str, int] = {}
FILES: dict[str, int] = {}
PREVIEWS: dict[str, int] = {}  # hooks screen previews compared


def _scenario(version: str) -> scenarios.Scenario:
    if version == "v0.9.0":
        base = scenarios.get("seed-resize")
    else:
        default = scenarios.get("default")
        conf = scenarios.LAB_WORKER_CONF + "sources:\n  local:\n    hooksEnabled: true\n"
        base = dataclasses.replace(
            default, nfd_version=version, nfd=dataclasses.replace(default.nfd, worker_config=conf)
        )
    return dataclasses.replace(
        base, objects=(), pods=(), nodes=tuple(dataclasses.replace(n, files=()) for n in base.nodes)
    )


@pytest.fixture(scope="module", params=("v0.9.0", "v0.16.6"))
def hooks_lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    v = request.param
    yield from running_lab(
        _scenario(v),
        tmp_path_factory.mktemp(f"lab-hooks-{v}"),
        lambda: (
            f"\nconformance cases on NFD {v}: {HOOKS.get(v, 0)} hooks, {HOOK_LINES.get(v, 0)} output lines, "
            f"{PREVIEWS.get(v, 0)} hooks screen previews; {FILES.get(v, 0)} feature files"
        ),
    )


@st.composite
def _hook(draw: st.DrawFn) -> tuple[str, str, bool]:
    """(name stem, script, executable)."""
    lines = draw(feature_lines())
    script = "#!/bin/sh\n" + "".join(f"printf '%s\\n' {shlex.quote(line)}\n" for line in lines)
    if draw(st.booleans()):
        script += "echo 'a warning on stderr' >&2\n"
    script += f"exit {draw(st.sampled_from((0, 0, 0, 1)))}\n"
    name = draw(st.sampled_from(("probe", "my-script", "a.b", "x_y")))
    return name, script, draw(st.sampled_from((True, True, True, False)))


def _dirs(lab: Lab) -> tuple[Path, Path]:
    root = lab.guest_roots[NODE]
    return root.path(NFD_SOURCE_D), root.path(NFD_FEATURES_D)


def test_hook_preview_equals_what_upstream_nfd_writes(hooks_lab: Lab) -> None:
    version = hooks_lab.scenario.nfd_version
    source_d, features_d = _dirs(hooks_lab)
    cases = itertools.count()
    with api(hooks_lab) as c:
        dep = discover_nfd(c)
    assert dep is not None and str(dep.version) == version

    @BATCH_SETTINGS
    @given(_hook())
    @example(("failing", "#!/bin/sh\necho rack=r1\necho 'to stderr' >&2\nexit 1\n", True))
    @example(("plain", "#!/bin/sh\necho rack=r2\necho /slash=1\n", False))
    @example(("loud", "#!/bin/sh\necho 'noise' >&2\necho example.com/tier=gold\necho zone.a=b\n", True))
    def case(hook: tuple[str, str, bool]) -> None:
        n = next(cases)
        stem, script, executable = hook

        def put() -> list[Path]:
            path = source_d / f"{stem}{n}"
            path.write_text(script)
            path.chmod(0o755 if executable else 0o644)
            return [path, sentinel(features_d, n)]

        what = f"hook {stem}{n} ({'executable' if executable else 'not executable'}):\n{script}"
        local = ["--hooks-dir", str(source_d), "--features-dir", str(features_d)]
        before, seen = labels_follow(hooks_lab, NODE, local, put, what)
        if executable:  # the screen writes a hook executable
            preview = preview_file(
                "hook", f"{stem}{n}", script, dep.version, config=dep.master_config(), node_name=NODE
            )
            added = {k: v for k, v in seen.items() if before.get(k) != v and "conformance-sentinel" not in k}
            assert preview.labels == added, f"the hooks screen's preview differs for\n{what}"
            PREVIEWS[version] = PREVIEWS.get(version, 0) + 1
        HOOKS[version] = HOOKS.get(version, 0) + 1
        HOOK_LINES[version] = HOOK_LINES.get(version, 0) + script.count("printf")

    case()
    assert HOOKS.get(version, 0) == BATCHES + 3  # and the three explicit examples


def test_v09_feature_file_preview_equals_what_upstream_nfd_writes(hooks_lab: Lab) -> None:
    version = hooks_lab.scenario.nfd_version
    if version != "v0.9.0":
        pytest.skip("feature files of v0.14+ are compared in test_conformance_real_nfd.py")
    source_d, features_d = _dirs(hooks_lab)
    cases = itertools.count()

    @BATCH_SETTINGS
    @given(feature_lines())
    def case(lines: list[str]) -> None:
        n = next(cases)
        text = "\n".join(lines) + "\n"
        local = ["--hooks-dir", str(source_d), "--features-dir", str(features_d)]
        labels_follow(hooks_lab, NODE, local, feature_file(features_d, n, text), text)
        FILES[version] = FILES.get(version, 0) + 1

    case()
    assert FILES.get(version, 0) == BATCHES
