"""The lab's node-feature-discovery releases, built from their upstream module (console/lab/upstream/nfd-*, issue 22
deliverable 1): every command of every release runs on this toolchain and says the release it was built as
(upstream's `-version`: `fmt.Println(ProgramName, version.Get())` in cmd/<command>/main.go, the version stamped
with `-X …/pkg/version.version` as upstream's Makefile does).

A release whose binary panics at start (old reflect2 on a new Go: modern-go/reflect2#24) fails here, not in a lab.
"""

from __future__ import annotations

import subprocess

import pytest

from console.lab.upstream.build import NFD, binary


@pytest.mark.parametrize("version", sorted(NFD))
def test_every_command_runs_and_names_its_release(version: str) -> None:
    program = NFD[version]
    assert {"nfd-master", "nfd-worker"} <= set(program.binaries())
    for command in program.binaries():
        p = subprocess.run(
            [str(binary(program, command=command)), "-version"], capture_output=True, text=True, timeout=60
        )
        assert p.returncode == 0, f"{command} {version}: exit {p.returncode}: {p.stderr[-2000:]}"
        assert p.stdout.strip() == f"{command} {version}", p.stdout
