"""Journals that cannot mislead (issue 9, deliverable 3): every journal fault ends with exit 2 naming the file,
and nothing is changed — no cordon, no Nova action, no audit record, the journal left as it was.

- a second process while the first run is live (the first is stopped with SIGSTOP the moment its journal
  records the cordon, so it provably still owns the run): refused by the run's flock with the owner's pid;
  the first run then finishes, with exactly one resize;
- truncated, garbage, wrong-shaped and older-version journals of the node: never skipped, never adopted;
- a journal of another cluster (kube-system namespace uid or API server differ) — the kube-system uid as the
  cluster's id: kubernetes/kubernetes#77487, OpenTelemetry k8s.cluster.uid (opentelemetry-specification#3267);
- `--resume` (or a plain rerun) with another --flavor: refused naming the difference;
- `--discard RUN_ID` moves the journal aside; a new run then works.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import journalsignal
import pytest
import yaml
from labtools import lab_env, wait_for

pytestmark = pytest.mark.lab

W_LIVE, W_BAD, W_FOREIGN, W_PARAMS = "j-live", "j-bad", "j-foreign", "j-params"


@pytest.fixture(scope="module")
def lab(tmp_path_factory, h):
    sc = h.worker_scenario("journal-faults", "m1.medium", [W_LIVE, W_BAD, W_FOREIGN, W_PARAMS])
    yield from h.start_lab(sc, tmp_path_factory.mktemp("journal-faults"))


def runbooks(state: Path) -> Path:
    return state / "console" / "runbooks"


def stopped_at_preflight(h, lab, state: Path, node: str, flavor: str = "m1.large") -> dict:
    """A real run of this lab stopped (SIGINT) once its journal records the preflight: nothing changed yet,
    the journal "interrupted", its Lease released."""
    code, _doc, err = h.scale_up(lab, state, node, "--flavor", flavor, "--yes", signal_at="preflight", sig="SIGINT")
    assert code == 4, err
    [journal] = h.journals(state)
    assert journal["status"] == "interrupted" and not h.node_obj(lab, node)["spec"].get("unschedulable")
    return journal


def unchanged(h, lab, node: str, state: Path, resizes: int) -> None:
    assert not h.node_obj(lab, node)["spec"].get("unschedulable")
    server = lab.nova.server(h.server_id(lab, node))
    assert (server.status, server.flavor.name) == ("ACTIVE", "m1.medium")
    assert len(h.nova_actions(lab, node, "resize")) == resizes
    assert h.audit_entries(state) == []


def assert_journal_fault(doc: dict, err: str, path: Path) -> None:
    assert doc["status"] == "error" and doc["error"] == "journal" and doc["exit_code"] == 2, doc
    assert doc["journal"] == str(path) and str(path) in doc["message"]
    assert f"--discard {path.stem}" in doc["message"]
    assert err.startswith("scale-up: runbook journal ") and "Traceback" not in err, err


def _state_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_a_second_process_is_refused_while_the_first_run_is_live(lab, tmp_path, h):
    """Issue 9: a second invocation 1.9 s into a live run "resumed" its journal; both raced on `.json.tmp` and
    both exited 4. Now the second is refused by the run's flock (exit 2, the owner's pid, the journal) and
    writes nothing; the first, continued, finishes alone."""
    env = lab_env(lab) | {"XDG_STATE_HOME": str(tmp_path)} | journalsignal.env("cordon", "SIGSTOP")
    first = subprocess.Popen(journalsignal.command("scale-up", W_LIVE, "--flavor", "m1.large", "--yes", "-o", "json"),
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: _state_of(first.pid) in ("T", "gone") or first.poll() is not None, timeout=120,
                 what="the first run to record its cordon (and stop)")
        assert _state_of(first.pid) == "T", first.communicate(timeout=30)
        [path] = runbooks(tmp_path).glob("scale-up-*.json")
        before = path.read_bytes()
        run_id = path.stem
        for extra in ((), ("--resume", run_id)):
            code, doc, err = h.scale_up(lab, tmp_path, W_LIVE, "--flavor", "m1.large", "--yes", *extra)
            assert code == 2, err
            assert doc["status"] == "refused" and doc["exit_code"] == 2 and doc["pid"] == str(first.pid), doc["message"]
            assert f"run {run_id} is in progress in another process (pid {first.pid}) — journal {path}" in \
                doc["message"]
            assert doc["journal"] == str(path)
        assert path.read_bytes() == before  # the second process never wrote the journal
        assert sorted(p.name for p in runbooks(tmp_path).iterdir()) == [f"{run_id}.json", f"{run_id}.lock"]
        assert len(h.nova_actions(lab, W_LIVE, "resize")) == 0
        first.send_signal(signal.SIGCONT)
        out, err = first.communicate(timeout=240)
    finally:
        if first.poll() is None:
            first.send_signal(signal.SIGCONT)
            first.kill()
            first.communicate(timeout=30)
    assert first.returncode == 0, err
    assert json.loads(out)["run_id"] == run_id and json.loads(out)["status"] == "done"
    assert len(h.nova_actions(lab, W_LIVE, "resize")) == 1
    assert lab.nova.server(h.server_id(lab, W_LIVE)).flavor.name == "m1.large"
    records = [e for e in h.audit_entries(tmp_path) if e.get("run_id") == run_id]
    for phase in ("intent", "outcome"):  # console/guard.py: one intent and one outcome per step
        actions = [e["action"] for e in records if e.get("phase") == phase]
        assert actions.count("runbook.scale-up.cordon") == 1 and actions.count("runbook.scale-up.resize") == 1
    assert [p.name for p in runbooks(tmp_path).iterdir()] == [f"{run_id}.json"]


@pytest.fixture(scope="module")
def real_journal(lab, tmp_path_factory, h) -> str:
    """The text of a journal this lab's run wrote (stopped after its preflight) for W_BAD."""
    state = tmp_path_factory.mktemp("j-bad-real")
    stopped_at_preflight(h, lab, state, W_BAD)
    [path] = runbooks(state).glob("*.json")
    return path.read_text()


def _wrong_shape(text: str) -> str:
    doc = json.loads(text)
    doc["steps"] = {s["id"]: s["status"] for s in doc["steps"]}
    return json.dumps(doc)


def _old_version(text: str) -> str:
    doc = json.loads(text)
    doc["version"] = 1
    del doc["cluster"], doc["infra"]
    return json.dumps(doc)


BAD = {
    "truncated": (lambda t: t[: len(t) // 2], "is not valid JSON, truncated or overwritten"),
    "empty": (lambda _t: "", "is empty (truncated)"),
    "garbage": (lambda _t: "\x00\x7fPK\x03\x04 not a journal \ufffd", "is not valid JSON"),
    "wrong-shape": (_wrong_shape, "is not a usable runbook journal: steps is"),
    "list": (lambda _t: "[1, 2, 3]", "it holds list, not a journal object"),
    "old-version": (_old_version, "is a version-1 journal; this console reads version 2"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_journal_of_the_node_refuses_the_run(lab, tmp_path, h, real_journal, case):
    """Issue 9: a truncated or garbage journal was skipped and the new run adopted the half-done state; a
    wrong-shaped one gave a traceback. Each now refuses a plain run and a --new run alike, naming the file."""
    make, says = BAD[case]
    run_id = json.loads(real_journal)["run_id"]
    path = runbooks(tmp_path) / f"{run_id}.json"
    path.parent.mkdir(parents=True)
    path.write_text(make(real_journal))
    before = path.read_bytes()
    resizes = len(h.nova_actions(lab, W_BAD, "resize"))
    for extra in ((), ("--new",)):
        code, doc, err = h.scale_up(lab, tmp_path, W_BAD, "--flavor", "m1.large", "--yes", *extra)
        assert code == 2, err
        assert_journal_fault(doc, err, path)
        assert says in doc["message"], doc["message"]
    unchanged(h, lab, W_BAD, tmp_path, resizes)
    assert path.read_bytes() == before and sorted(runbooks(tmp_path).iterdir()) == [path]


def _cluster(lab) -> tuple[str, str]:
    kubeconfig = yaml.safe_load(Path(lab_env(lab)["KUBECONFIG"]).read_text())
    server = kubeconfig["clusters"][0]["cluster"]["server"]
    return server, lab.store.get("namespaces", None, "kube-system")["metadata"]["uid"]


def test_a_journal_of_another_cluster_is_refused(lab, tmp_path, h):
    """Issue 9: a journal from another cluster was resumed against a fresh lab. The journal names its cluster
    (this lab's API server and kube-system uid), cloud and VM; a journal naming another one is refused."""
    journal = stopped_at_preflight(h, lab, tmp_path, W_FOREIGN)
    server, uid = _cluster(lab)
    assert journal["cluster"] == {"server": server, "kube_system_uid": uid, "note": ""}
    assert journal["infra"]["method"] == "openstack" and journal["infra"]["vm"] == h.server_id(lab, W_FOREIGN)
    assert journal["infra"]["openstack"]["auth_url"] and journal["infra"]["openstack"]["project_id"]
    path = runbooks(tmp_path) / f"{journal['run_id']}.json"
    for cluster, names in (({"server": server, "kube_system_uid": "0b7c2d9e-other-cluster"}, "0b7c2d9e-other-cluster"),
                           ({"server": "https://10.20.0.5:6443", "kube_system_uid": uid}, "https://10.20.0.5:6443")):
        path.write_text(json.dumps({**journal, "cluster": {**cluster, "note": ""}}))
        before = path.read_bytes()
        code, doc, err = h.scale_up(lab, tmp_path, W_FOREIGN, "--flavor", "m1.large", "--yes")
        assert code == 2, err
        assert_journal_fault(doc, err, path)
        assert "belongs to another cluster" in doc["message"] and names in doc["message"] and uid in doc["message"]
        assert path.read_bytes() == before
    # this cluster, but another cloud (Keystone) or another VM behind the node
    cloud = {**journal["infra"]["openstack"], "auth_url": "https://keystone.other.example:5000/v3"}
    for infra, says in (({**journal["infra"], "openstack": cloud}, "was run on OpenStack https://keystone.other"),
                        ({**journal["infra"], "vm": "6f0e0c1a-gone"}, "acted on VM 6f0e0c1a-gone, but the node's VM")):
        path.write_text(json.dumps({**journal, "infra": infra}))
        code, doc, err = h.scale_up(lab, tmp_path, W_FOREIGN, "--flavor", "m1.large", "--yes")
        assert code == 2, err
        assert_journal_fault(doc, err, path)
        assert says in doc["message"], doc["message"]
    unchanged(h, lab, W_FOREIGN, tmp_path, 0)


def test_resume_with_another_flavor_is_refused_then_discard_and_a_new_run(lab, tmp_path, h):
    """Issue 9: `--resume` with a different --flavor silently kept the old target. Refused naming the difference
    (timeouts may differ); `--discard RUN_ID` moves the journal aside, and a new run with that flavor works."""
    journal = stopped_at_preflight(h, lab, tmp_path, W_PARAMS, "m1.xlarge")
    run_id = journal["run_id"]
    path = runbooks(tmp_path) / f"{run_id}.json"
    for extra in (("--resume", run_id), ()):
        code, doc, err = h.scale_up(lab, tmp_path, W_PARAMS, "--flavor", "m1.large", "--yes", *extra)
        assert code == 2, err
        assert doc["status"] == "refused" and doc["journal"] == str(path), doc
        assert doc["differences"] == ["--flavor m1.large differs from the run's m1.xlarge"]
        assert f"(run {run_id}, journal {path}); resume without it" in doc["message"]
        assert f"--discard {run_id}" in doc["message"]
    unchanged(h, lab, W_PARAMS, tmp_path, 0)
    code, _doc, err = h.scale_up(lab, tmp_path, W_PARAMS, "--discard", run_id)  # stdin is not a terminal
    assert code == 5 and "without --yes" in err and path.exists()
    code, doc, err = h.scale_up(lab, tmp_path, W_PARAMS, "--discard", run_id, "--yes")
    assert code == 0, err
    assert doc["status"] == "discarded" and doc["run_status"] == "interrupted" and doc["journal"] == str(path)
    moved = Path(doc["moved_to"])
    assert not path.exists() and moved.name.startswith(f"{run_id}.json.discarded-")
    assert json.loads(moved.read_text())["run_id"] == run_id  # kept, not deleted
    assert f"run {run_id}: scale-up of {W_PARAMS}, interrupted" in err and "[done]" in err
    code, doc, err = h.scale_up(lab, tmp_path, W_PARAMS, "--flavor", "m1.large", "--yes")
    assert code == 0, err
    assert doc["run_id"] != run_id and lab.nova.server(h.server_id(lab, W_PARAMS)).flavor.name == "m1.large"


def test_a_bad_revert_journal_refuses_the_revert_and_is_discarded(lab, tmp_path, h):
    """`--revert` reads the node's journals as a scale-up does: a truncated revert journal refuses it (exit 2,
    the file named), before Nova is asked anything; `--discard` takes the file by its name and moves it aside."""
    path = runbooks(tmp_path) / f"revert-{W_BAD}-20261201T000000-beef.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 2, "kind": "revert", "node": "')
    resizes = len(h.nova_actions(lab, W_BAD, "resize"))
    code, doc, err = h.scale_up(lab, tmp_path, W_BAD, "--revert", "--yes")
    assert code == 2, err
    assert_journal_fault(doc, err, path)
    assert h.nova_actions(lab, W_BAD, "revertResize") == []
    unchanged(h, lab, W_BAD, tmp_path, resizes)
    code, doc, err = h.scale_up(lab, tmp_path, W_BAD, "--discard", path.stem, "--yes")
    assert code == 0, err
    assert doc["status"] == "discarded" and "is not valid JSON" in doc["problem"] and not path.exists()
    assert "what that run had done is unknown" in err
