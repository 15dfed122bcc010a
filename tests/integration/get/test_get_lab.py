"""`console get` on the default lab: the same figures as the TUI's screens (Pilot reads them) and as kubectl /
the openstack CLI where they show the same thing; real clients over HTTP and libvirt, one lab for the module."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from labstart import start_lab
from labtools import lab_env, run
from tuitools import isolated_xdg  # noqa: F401 (an autouse fixture)

from console.cli import main
from console.lab.world import Lab
from screenshots import loaded, make_app, wait_until

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from start_lab("default", tmp_path_factory.mktemp("get-lab"), clouds_env=True, wait_usage=True)


@pytest.fixture
def env(lab: Lab, tmp_path: Path) -> dict[str, str]:
    """`. DIR/env` (KUBECONFIG, OS_CLOUD, OS_CLIENT_CONFIG_FILE, CONSOLE_LIBVIRT_URI) and empty XDG dirs."""
    out = lab_env(lab)
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        out[var] = str(tmp_path / var.lower())
    return out


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


Get = Callable[..., Result]


@pytest.fixture
def console(env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Get:
    """`console get ARGS` in this process (console.cli.main, as `python -m console` runs it: one interpreter start
    less per call on a loaded machine), in the lab's environment; checks the exit code."""
    for var in ("KUBECONFIG", "OS_CLOUD", "OS_CLIENT_CONFIG_FILE", "CONSOLE_LIBVIRT_URI"):
        monkeypatch.setenv(var, env[var])

    def call(*args: str, code: int = 0) -> Result:
        capsys.readouterr()
        got = main(["get", *args])
        out, err = capsys.readouterr()
        assert got == code, f"exit {got}\nstdout: {out}\nstderr: {err}"
        return Result(got, out, err)

    return call


def get_json(console: Get, *args: str) -> Any:
    return json.loads(console(*args, "-o", "json").stdout)


def columns(text: str) -> list[dict[str, str]]:
    """A kubectl-style table read by its header's column offsets."""
    header, *lines = text.splitlines()
    names = [h for h in header.split("   ") if h.strip()]
    starts = [header.index(n.strip()) for n in names]
    ends = [*starts[1:], None]
    return [{n.strip(): line[s:e].strip() for n, s, e in zip(names, starts, ends, strict=True)} for line in lines]


def plain(cell: Any) -> str:
    """A table cell as the user reads it, without the capacity bar."""
    return str(cell).lstrip("█░▏▎▍▌▋▊▉ ").strip()


async def test_get_nodes_shows_what_the_nodes_screen_shows(lab: Lab, console: Get) -> None:
    app = make_app(lab)
    try:
        # 160 columns: the width at which the nodes screen shows capacity/allocatable/requested as `get -o wide`
        async with app.run_test(size=(160, 40)) as pilot:
            await loaded(pilot)
            table = app.screen.query_one("#nodes-table")
            keys = [c.key for c in table.columns]  # the cells of a row, by column key
            tui = {name: dict(zip(keys, map(plain, cells), strict=False))
                   for name, cells in zip(table.keys, table.cells, strict=True)}
            rows = dict(app.view.rows_by_name)
    finally:
        app.gateways.stop()
    text = columns(console("nodes", "-o", "wide").stdout)
    doc = get_json(console, "nodes")
    assert [r["NAME"] for r in text] == [d["name"] for d in doc] == list(tui) == sorted(rows)
    for line, node in zip(text, doc, strict=True):
        cells, row = tui[node["name"]], rows[node["name"]]
        # the nodes screen at 160 columns (wide): CPU/MEM cap/alloc/req, pods, NFD, the VM with its markers
        assert line["CPU CAP/ALLOC/REQ"] == cells["cpu"] and line["MEM CAP/ALLOC/REQ"] == cells["mem"], (line, cells)
        assert line["PODS"] == cells["pods"] == str(node["pods"])
        assert line["NFD"] == cells["nfd"] == str(node["nfdLabels"])
        assert line["VM"] == cells["vm"] and line["ROLES"] == cells["roles"] and line["VERSION"] == cells["version"]
        assert node["nfdLabels"] == row.nfd_labels and node["pods"] == row.requested.pods
        assert node["vm"]["flavor"] == row.vm.flavor and node["vm"]["vcpus"] == row.vm.vcpus
        assert node["vm"]["markers"] == row.stale.markers == ""  # the default lab: nothing stale
        assert node["usage"] is not None  # the lab serves metrics.k8s.io
    assert columns(console("nodes").stdout)[0].keys() >= {"NAME", "CPU REQ/ALLOC", "CPU%", "VM"}


def test_get_nodes_json_agrees_with_kubectl(lab: Lab, env: dict[str, str], console: Get) -> None:
    """Capacity and allocatable as the kubelet posted them (`kubectl get nodes -o json`), requests as `kubectl
    describe node`'s "Allocated resources" sums them, the flavor as `openstack server list` shows it."""
    doc = {d["name"]: d for d in get_json(console, "nodes")}
    nodes = {n["metadata"]["name"]: n for n in json.loads(run(["kubectl", "get", "nodes", "-o", "json"], env).stdout)
             ["items"]}
    assert set(doc) == set(nodes)
    for name, n in nodes.items():
        for key in ("capacity", "allocatable"):
            assert doc[name][key] == {"cpu": n["status"][key]["cpu"], "memory": n["status"][key]["memory"]}
        roles = sorted(k.split("/", 1)[1] for k in n["metadata"]["labels"] if k.startswith("node-role.kubernetes.io/"))
        assert doc[name]["roles"] == roles and doc[name]["status"] == "Ready"
    described = run(["kubectl", "describe", "node", "kube-worker03"], env).stdout
    allocated = described.split("Allocated resources:", 1)[1]
    cpu, memory = (next(line.split()[1] for line in allocated.splitlines() if line.strip().startswith(k))
                   for k in ("cpu ", "memory "))
    assert doc["kube-worker03"]["requested"] == {"cpu": cpu, "memory": memory}  # 6005m, 8256Mi
    flavors = {s["Name"]: s["Flavor"] for s in json.loads(
        run(["openstack", "server", "list", "-f", "json", "-c", "Name", "-c", "Flavor"], env).stdout)}
    assert {name: d["vm"]["flavor"] for name, d in doc.items()} == flavors


def test_selector_filters_as_kubectl_and_says_when_nothing_matches(env: dict[str, str], console: Get) -> None:
    avx = "feature.node.kubernetes.io/cpu-cpuid.AVX512F=true"
    kubectl = run(["kubectl", "get", "nodes", "-l", avx, "-o", "name"], env).stdout.split()
    assert [d["name"] for d in get_json(console, "nodes", "-l", avx)] == [k.removeprefix("node/") for k in kubectl]
    empty = console("nodes", "-l", "example.com/nosuch=x")
    assert empty.stdout == "" and "no nodes match -l example.com/nosuch=x (5 nodes in the cluster)" in empty.stderr
    bad = console("nodes", "-l", "foo=bar=baz,,(", code=2)
    assert bad.stderr.count("\n") == 1 and "bad label selector" in bad.stderr and "Traceback" not in bad.stderr


async def test_get_pending_shows_what_the_pending_screen_shows(lab: Lab, env: dict[str, str], console: Get) -> None:
    app = make_app(lab)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await loaded(pilot)
            await pilot.press("p")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "PendingScreen" and app.screen.advice,
                             what="fit analysis")
            why = str(app.screen.query_one("#pending-why").render())
            pods = app.screen.query_one("#pending-pods")
            tui_pods = {key: [str(c) for c in cells] for key, cells in zip(pods.keys, pods.cells, strict=True)}
            fit = app.screen.query_one("#pending-fit")
            tui_fit = {key: [str(c) for c in cells] for key, cells in zip(fit.keys, fit.cells, strict=True)}
    finally:
        app.gateways.stop()
    [pod] = get_json(console, "pending")
    assert f"{pod['namespace']}/{pod['name']}" in tui_pods
    assert pod["advice"] == "Smallest fitting size: kube-worker01 → 4 vCPU / 6Gi (flavor m1.large)"
    assert pod["advice"] in why
    assert tui_pods["default/nginx"][3] == pod["failedScheduling"]
    assert [c["node"] for c in pod["candidates"]] == list(tui_fit)
    for c in pod["candidates"]:
        size = "—" if c["fitsNow"] else f"{c['size']['vcpus']} vCPU / {c['size']['memory']}"
        assert tui_fit[c["node"]][2] == size and tui_fit[c["node"]][4] == c["reason"]
    assert pod["requests"] == {"cpu": "3", "memory": "5Gi"}
    # kubectl: the same Pending pods, and the FailedScheduling message among the pod's events
    kubectl = run(["kubectl", "get", "pods", "-A", "--field-selector", "status.phase=Pending", "-o", "json"], env)
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in json.loads(kubectl.stdout)["items"]] == \
        [("default", "nginx")]
    events = run(["kubectl", "get", "events", "-n", "default", "--field-selector",
                  "involvedObject.name=nginx,reason=FailedScheduling", "-o", "json"], env)
    assert pod["failedScheduling"] in {e["message"].strip() for e in json.loads(events.stdout)["items"]}
    text = columns(console("pending").stdout)
    assert text == [{"POD": "default/nginx", "CPU": "3", "MEM": "5.0Gi", "ADVICE": pod["advice"],
                     "WHY (latest FailedScheduling)": pod["failedScheduling"]}]


async def test_get_node_shows_what_the_node_detail_shows(lab: Lab, env: dict[str, str], console: Get) -> None:
    app = make_app(lab)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await loaded(pilot)
            app.screen.query_one("#nodes-table").move_to("kube-worker03")
            await pilot.press("enter")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "NodeDetailScreen" and app.screen._origins,
                             what="the node's label origins")
            labels = str(app.screen.query_one("#node-labels").render())
            title = str(app.screen.query_one("#node-title").render())
    finally:
        app.gateways.stop()
    node = get_json(console, "node", "kube-worker03")
    kubectl = json.loads(run(["kubectl", "get", "node", "kube-worker03", "-o", "json"], env).stdout)
    merged = {k: v for group in node["labels"].values() for k, v in group.items()}
    assert merged == kubectl["metadata"]["labels"]
    assert f"Labels ({len(merged)}, NFD {node['nfdLabels']}) by origin" in labels
    for group, members in node["labels"].items():
        assert f"{group} ({len(members)})" in labels
    assert {"cpu", "kernel", "local", "other"} <= set(node["labels"])
    assert node["vm"]["flavor"] == "m1.large" and "m1.large (8 vCPU / 12Gi)" in title
    assert any(p["name"] == "analytics-0" for p in node["podList"])
    text = console("node", "kube-worker03", "-o", "wide").stdout
    assert f"Labels ({len(merged)}, NFD {node['nfdLabels']}) by origin:" in text
    assert "VM:        m1.large (8 vCPU / 12Gi)" in text and "default/analytics-0" in text


def test_exit_codes_not_found_and_api_unusable(lab: Lab, env: dict[str, str], console: Get,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    missing = console("node", "nosuch", "-o", "json", code=3)
    doc = json.loads(missing.stdout)
    assert doc["error"] == "not-found" and doc["exit_code"] == 3 and "kube-worker01" in doc["message"]
    faults = lab.state.root / "faults"
    monkeypatch.setenv("KUBECONFIG", str(faults / "kubeconfig-forbidden"))
    refused = console("pending", code=6)
    assert refused.stderr.startswith("console: ") and "403" in refused.stderr and refused.stderr.count("\n") == 1
    # and as a process: `python -m console get`, the faults contract's one line and JSON, no traceback
    down = run([sys.executable, "-m", "console", "get", "nodes", "-o", "json"],
               {**env, "KUBECONFIG": str(faults / "kubeconfig-unreachable")}, check=False)
    assert down.returncode == 6 and json.loads(down.stdout)["error"] == "kube-unreachable"
    assert down.stderr.count("\n") == 1 and "Traceback" not in down.stderr


def test_reads_only_a_viewer_may_run_every_get(env: dict[str, str], console: Get) -> None:
    """RBAC: get/list/watch (the lab's `lab-viewer` context, user `viewer`) is enough for all three views, and
    they show what the cluster admin sees."""
    for args in (("nodes",), ("pending",), ("node", "kube-worker01")):
        viewer = get_json(console, *args, "--context", "lab-viewer")
        admin = get_json(console, *args)
        if args == ("nodes",):
            assert [(d["name"], d["requested"], d["nfdLabels"]) for d in viewer] == \
                [(d["name"], d["requested"], d["nfdLabels"]) for d in admin]
        elif args == ("pending",):
            assert [(p["name"], p["advice"]) for p in viewer] == [(p["name"], p["advice"]) for p in admin]
        else:
            assert viewer["labels"] == admin["labels"] and viewer["requested"] == admin["requested"]
