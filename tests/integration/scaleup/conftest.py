"""Labs for the scale-up tests and a `scale_up` runner: the CLI in a subprocess with the lab's env.

One lab per module. The crash and fault modules use a scenario with one worker per case
(`worker_scenario`), so every case starts from a fresh VM without resetting the world.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import journalsignal
import pytest
from labtools import lab_env, quick_scheduler_retries

from console.lab import scenarios
from console.lab.scenarios import NodeSpec, Scenario
from console.lab.world import Lab


def _start(scenario: Scenario, root: Path) -> Iterator[Lab]:
    lab = Lab(scenario, root, wait_usage=False)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


@pytest.fixture(scope="module")
def resize_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """Field report 2's offline lab; the Pending nginx a run makes fit binds on the next 1 s retry after the
    uncordon (labtools.quick_scheduler_retries), not after the 10 s backoff it reached since the lab started."""
    for lab in _start(scenarios.get("seed-resize"), tmp_path_factory.mktemp("scaleup-resize")):
        yield quick_scheduler_retries(lab)


@pytest.fixture(scope="module")
def live_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """Field report 2's online lab, its scheduler retrying every second as resize_lab's."""
    for lab in _start(scenarios.get("seed-live"), tmp_path_factory.mktemp("scaleup-live")):
        yield quick_scheduler_retries(lab)


def worker_scenario(name: str, flavor: str, workers: list[str], flavors: dict[str, str] | None = None) -> Scenario:
    """A control plane and one worker VM per name on `flavor` (or `flavors[name]`), no pods: cases add their own."""
    base = scenarios.SEED_RESIZE
    nodes = (base.nodes[0], *(NodeSpec(w, (flavors or {}).get(w, flavor), files=base.nodes[1].files)
                              for w in workers))
    return Scenario(name=name, description=f"{len(workers)} workers on {flavor}", kubernetes_version="v1.21.6",
                    nfd_version=base.nfd_version, nodes=nodes, nfd=base.nfd)


def start_lab(scenario: Scenario, root: Path) -> Iterator[Lab]:
    yield from _start(scenario, root)


def add_case_pods(lab: Lab, node: str, cpu: str, memory: str) -> str:
    """A pod on `node` the drain must evict, and a Pending pod only `node` may take once it is bigger: each made
    by a ReplicaSet of one replica (the drain evicts a controller's pods without --force; its ReplicaSet makes
    another, which waits until `node` takes pods again), stopping within a second of its eviction (its grace
    period, which a kubelet gives a container to exit). Returns the Pending pod's name once it exists."""
    from labtools import wait_for

    def replicaset(name: str, cpu_: str, mem_: str) -> str:
        labels = {"app": name}
        made = lab.store.create("replicasets.apps", {
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.21",
                                         "resources": {"requests": {"cpu": cpu_, "memory": mem_}}}],
                         "nodeSelector": {"kubernetes.io/hostname": node}, "terminationGracePeriodSeconds": 1,
                         "schedulerName": "default-scheduler"}}}})
        uid = made["metadata"]["uid"]

        def pod() -> dict[str, Any] | None:
            pods, _ = lab.store.list("pods", "default", lambda p: any(
                r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or []))
            return pods[0] if pods else None

        return str(wait_for(pod, 30, what=f"ReplicaSet {name}'s pod")["metadata"]["name"])  # type: ignore[index]

    fill = replicaset(f"fill-{node}", "100m", "64Mi")
    wait_for(lambda: pod_obj(lab, fill).get("status", {}).get("phase") == "Running", 60,
             what=f"{fill} Running on {node}")
    return replicaset(f"want-{node}", cpu, memory)


def server_id(lab: Lab, node: str) -> str:
    return next(vm.server_id for vm in lab.vms if vm.node_name == node)


def nova_actions(lab: Lab, node: str, name: str) -> list[Any]:
    return [a for a in lab.nova.actions(server_id(lab, node)) if a.action == name]


def journals(state: Path) -> list[dict[str, Any]]:
    d = state / "console" / "runbooks"
    return [json.loads(p.read_text()) for p in sorted(d.glob("*.json"))] if d.exists() else []


def audit_entries(state: Path) -> list[dict[str, Any]]:
    p = state / "console" / "audit.log"
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()] if p.exists() else []


TRANSCRIPT: list[str] = []  # every CLI output of the session, for the no-secrets check


def _scale_up(lab: Lab, state: Path, *args: str, extra_env: dict[str, str] | None = None,
              timeout: float = 150, signal_at: str = "", sig: str = "SIGKILL") -> tuple[int, dict, str]:
    """`signal_at` ("<step>" or "<step>:acted"): send the CLI `sig` the moment its journal records it
    (tests/support/journalsignal.py)."""
    env = lab_env(lab) | {"XDG_STATE_HOME": str(state)} | (extra_env or {})
    argv = [sys.executable, "-m", "console", "scale-up", *args, "-o", "json"]
    if signal_at:
        argv = journalsignal.command("scale-up", *args, "-o", "json")
        env |= journalsignal.env(signal_at, sig)
    try:
        proc = subprocess.run(argv, env=env,
                              capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:  # show the whole log: which step hung, and the lab's view of it
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        pytest.fail(f"scale-up {' '.join(args)} did not finish in {timeout:g}s; its log:\n{err}\n"
                    f"lab kubelets: {_kubelet_states(lab)}", pytrace=False)
    TRANSCRIPT.append(proc.stdout + proc.stderr)
    try:
        doc = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except ValueError:
        doc = {}
    return proc.returncode, doc, proc.stderr


def _kubelet_states(lab: Lab) -> str:
    return ", ".join(f"{n}={k.state}/{k.service} restarts={k.restarts} guest_running={k.guest.running}"
                     for n, k in sorted(lab.kubelets.items()))


def scale_up_popen(lab: Lab, state: Path, *args: str) -> subprocess.Popen:
    env = lab_env(lab) | {"XDG_STATE_HOME": str(state)}
    return subprocess.Popen([sys.executable, "-m", "console", "scale-up", *args, "-o", "json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)


def stale_kubelet(lab: Lab, node: str) -> int:
    """Offline the guest's last vCPU and restart the kubelet, which then reports one CPU fewer than the VM has
    (it counts online CPUs at start); returns the VM's vCPUs."""
    from labtools import wait_for

    kubelet = lab.kubelets[node]
    cpus = len(kubelet.guest.online_cpus)
    kubelet.guest.set_cpu_online(cpus - 1, False)
    kubelet.restart(wait=True)
    wait_for(lambda: node_obj(lab, node)["status"]["capacity"]["cpu"] == str(cpus - 1), timeout=60,
             what=f"the kubelet of {node} to report {cpus - 1} CPUs")
    return cpus


def journal_step(journal: dict[str, Any], step: str) -> dict[str, Any]:
    return next(s for s in journal["steps"] if s["id"] == step)


def node_obj(lab: Lab, name: str = "kube-worker02") -> dict:
    return lab.store.get("nodes", None, name)


def pod_obj(lab: Lab, name: str) -> dict:
    return lab.store.get("pods", "default", name)


@pytest.fixture
def scale_up():
    """Run `python -m console scale-up ... -o json`; returns (exit code, JSON doc, stderr)."""
    return _scale_up


class Helpers:
    """The helpers above, for test modules (conftest is not importable under --import-mode=importlib)."""

    worker_scenario = staticmethod(worker_scenario)
    start_lab = staticmethod(start_lab)
    add_case_pods = staticmethod(add_case_pods)
    server_id = staticmethod(server_id)
    nova_actions = staticmethod(nova_actions)
    journals = staticmethod(journals)
    journal_step = staticmethod(journal_step)
    stale_kubelet = staticmethod(stale_kubelet)
    audit_entries = staticmethod(audit_entries)
    node_obj = staticmethod(node_obj)
    pod_obj = staticmethod(pod_obj)
    scale_up = staticmethod(_scale_up)
    scale_up_popen = staticmethod(scale_up_popen)
    transcript = TRANSCRIPT


@pytest.fixture(scope="session")
def h() -> type[Helpers]:
    return Helpers
