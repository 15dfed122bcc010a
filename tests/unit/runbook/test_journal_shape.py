"""Journal shape validation (console/runbook/journal_shape.py) and the checks a resume makes from a journal:
cluster identity (console/runbook/identity.py), parameters (console/runbook/resume_params.py), the flock
(console/runbook/journal_lock.py), the held-node marker and --discard on bad files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.runbook.discard import discard, locate, summary
from console.runbook.held import held_runs
from console.runbook.identity import cluster_problem, infra_problem
from console.runbook.journal import Journal, JournalError, read_doc
from console.runbook.journal_lock import JournalBusy, JournalLock
from console.runbook.journal_shape import node_of, problem
from console.runbook.resume_params import ParamsDiffer, recorded_request, resume_request
from console.runbook.scaleup import ScaleUpRequest

STEPS = [{"id": "cordon", "title": "cordon w1", "mutating": True},
         {"id": "resize", "title": "resize", "mutating": True}]
CLUSTER = {"server": "https://10.0.0.1:6443", "kube_system_uid": "8c0a-uid", "note": ""}


def _journal(tmp_path, **params) -> Journal:
    req = {"node": "w1", "flavor": "m1.large", "vcpus": None, "memory_mib": None, "method": None,
           "resize_timeout": 300.0, "node_timeout": 180.0, "pods_timeout": 60.0, "force": False,
           "delete_emptydir_data": False, "drain_timeout": 120.0, **params}
    return Journal.create("scale-up", "w1", req, STEPS, directory=tmp_path, cluster=CLUSTER,
                          infra={"method": "openstack", "openstack": {"auth_url": "https://ks/v3", "project_id": "p1"},
                                 "libvirt": [], "vm": "srv-1"})


def test_a_created_journal_has_the_shape_it_is_checked_against(tmp_path):
    j = _journal(tmp_path)
    assert problem(json.loads(j.path.read_text()), j.path.stem) is None
    assert node_of(j.run_id) == ("scale-up", "w1")
    assert node_of("scale-up-kube-worker-02-20261201T101500-ab12") == ("scale-up", "kube-worker-02")
    assert node_of("scale-up-garbage") is None


@pytest.mark.parametrize(("edit", "says"), [
    (lambda d: d.pop("steps"), "steps is missing"),
    (lambda d: d.update(steps={}), "steps is {}, expected a list"),
    (lambda d: d.update(steps=[]), "steps is empty"),
    (lambda d: d["steps"][1].update(status="bogus"), "steps[1].status is 'bogus', expected one of pending"),
    (lambda d: d["steps"][0].pop("id"), "steps[0].id is missing"),
    (lambda d: d["steps"][0].update(mutating="yes"), "steps[0].mutating is 'yes', expected true or false"),
    (lambda d: d["steps"].append(dict(d["steps"][0])), "step 'cordon' appears twice"),
    (lambda d: d.update(status=5), "status is 5, expected a string"),
    (lambda d: d.update(version=True), "version is True, expected an integer"),
    (lambda d: d.update(version=1), "version-1 journal"),
    (lambda d: d.update(node="w2"), "its run id names a scale-up run of w1, its content a scale-up run of w2"),
    (lambda d: d.update(run_id="scale-up-w1-20990101T000000-ffff"), "is not its file name"),
    (lambda d: d.update(cluster="x"), "cluster is 'x', expected an object"),
    (lambda d: d["cluster"].pop("server"), "cluster.server is missing"),
    (lambda d: d["context"].update(plan=[]), "context.plan is [], expected an object"),
    (lambda d: d.update(params=None), "params is None, expected an object"),
])
def test_wrong_shapes_are_named(tmp_path, edit, says):
    j = _journal(tmp_path)
    doc = json.loads(j.path.read_text())
    edit(doc)
    why = problem(doc, j.path.stem)
    assert why is not None and says in why, why


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                    max_leaves=20)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(doc=JSON)
def test_random_json_never_crashes_the_loader(tmp_path, doc):
    path = tmp_path / "scale-up-w1-20261201T000000-beef.json"
    path.write_text(json.dumps(doc))
    try:
        read_doc(path)
    except JournalError as e:
        assert str(path) in str(e) and "--discard scale-up-w1-20261201T000000-beef" in str(e)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(data=st.data())
def test_a_valid_journal_with_one_random_value_replaced_never_crashes(tmp_path, data):
    """Mutate any key of a real journal (steps, params too) to any JSON value: loading either accepts it or says
    what is wrong; a loaded scale-up journal always gives a request, or a JournalError naming the file."""
    j = _journal(tmp_path)
    doc = json.loads(j.path.read_text())
    target = data.draw(st.sampled_from(["top", "step", "params", "cluster"]))
    holder = {"top": doc, "step": doc["steps"][0], "params": doc["params"], "cluster": doc["cluster"]}[target]
    key = data.draw(st.sampled_from(sorted(holder)))
    holder[key] = data.draw(JSON)
    j.path.write_text(json.dumps(doc))
    try:
        again = Journal.load(j.run_id, tmp_path)
        recorded_request(again)
    except JournalError as e:
        assert str(j.path) in str(e)
    held_runs(tmp_path)  # the nodes screen's marker never raises


def test_a_huge_file_is_refused_without_reading_it_whole(tmp_path):
    path = tmp_path / "scale-up-w1-20261201T000000-beef.json"
    with path.open("wb") as fh:
        fh.truncate(64 * 1024 * 1024)
    with pytest.raises(JournalError, match="larger than 16 MiB"):
        read_doc(path)


def test_cluster_and_cloud_identity_comparisons():
    assert cluster_problem(CLUSTER, dict(CLUSTER)) is None
    other = cluster_problem(CLUSTER, {**CLUSTER, "kube_system_uid": "other-uid"})
    assert other and "another cluster" in other and "8c0a-uid" in other and "other-uid" in other
    assert "https://10.0.0.2:6443" in cluster_problem(CLUSTER, {**CLUSTER, "server": "https://10.0.0.2:6443"})
    # a user who may not read kube-system (403): the server URL alone decides
    assert cluster_problem(CLUSTER, {**CLUSTER, "kube_system_uid": None}) is None
    rec = {"method": "openstack", "openstack": {"auth_url": "https://ks/v3", "project_id": "p1"}, "vm": "srv-1"}
    assert infra_problem(rec, dict(rec)) is None
    assert "no OpenStack cloud" in infra_problem(rec, {**rec, "openstack": None})
    ks2 = {"auth_url": "https://ks2/v3", "project_id": "p1"}
    assert "https://ks2/v3" in infra_problem(rec, {**rec, "openstack": ks2})
    assert "VM srv-1" in infra_problem(rec, {**rec, "vm": "srv-2"})
    lv = {"method": "libvirt", "libvirt": ["qemu:///system"], "vm": "dom"}
    assert "qemu+ssh://h/system" in infra_problem(lv, {**lv, "libvirt": ["qemu+ssh://h/system"]})


def test_resume_with_other_parameters_names_each_difference(tmp_path):
    j = _journal(tmp_path)
    with pytest.raises(ParamsDiffer) as e:
        resume_request(j, ScaleUpRequest(node="w1", flavor="m1.xlarge"))
    assert "--flavor m1.xlarge differs from the run's m1.large" in str(e.value)
    assert str(j.path) in str(e.value) and f"--discard {j.run_id}" in str(e.value)
    with pytest.raises(ParamsDiffer, match=r"--memory 16Gi differs from the run's none.*--method libvirt differs"):
        resume_request(j, ScaleUpRequest(node="w1", memory_mib=16384, method="libvirt"))
    with pytest.raises(ParamsDiffer, match="--force was not given to the run"):
        resume_request(j, ScaleUpRequest(node="w1", force=True))
    # the same target, or none, resumes; timeouts are the rerun's
    same = resume_request(j, ScaleUpRequest(node="w1", flavor="m1.large", method="openstack", node_timeout=5))
    assert (same.flavor, same.node_timeout, same.resize_timeout) == ("m1.large", 5, 300.0)
    assert resume_request(j, ScaleUpRequest(node="w1")).flavor == "m1.large"


def test_a_second_process_is_refused_the_run_and_named(tmp_path):
    """The flock is the mechanism: a child process holds it; this process is refused with the child's pid."""
    j = _journal(tmp_path)
    code = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from console.runbook.journal_lock import JournalLock
        lock = JournalLock(Path({str(tmp_path)!r}), {j.run_id!r})
        lock.acquire()
        print("held", flush=True)
        sys.stdin.read()
    """)
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env={**os.environ})
    try:
        assert child.stdout.readline().strip() == "held"
        with pytest.raises(JournalBusy) as e:
            JournalLock(tmp_path, j.run_id).acquire()
        assert f"run {j.run_id} is in progress in another process (pid {child.pid})" in str(e.value)
        assert str(j.path) in str(e.value) and e.value.pid == str(child.pid)
        with pytest.raises(JournalBusy):
            discard(locate(j.run_id, "w1", tmp_path))
        assert j.path.exists()
    finally:
        child.stdin.close()
        child.wait(timeout=30)
    JournalLock(tmp_path, j.run_id).check()  # free once the owner is gone


def test_bad_journals_mark_their_node_and_discard_moves_them_aside(tmp_path):
    good = _journal(tmp_path)
    good.mark("cordon", "done")
    bad = tmp_path / "scale-up-w2-20261201T000000-beef.json"
    bad.write_text('{"version": 2, "run_id": "scale-up-w2-20261201T000000-beef", "steps": [{"id"')
    (tmp_path / "scale-up-stray.json").write_text("[]")
    runs = held_runs(tmp_path)
    assert runs["w1"][0].status == "running"
    [w2] = runs["w2"]
    assert w2.status == "unusable" and "not valid JSON" in w2.state and "--discard " + bad.stem in w2.state
    assert runs[""][0].run_id == "scale-up-stray"
    found = locate(bad.stem, "w2", tmp_path)
    assert "cannot be used" in summary(found) and "unknown" in summary(found)
    with pytest.raises(JournalError, match="is a run of w2, not of w1"):
        locate(bad.stem, "w1", tmp_path)
    moved = discard(found)
    assert not bad.exists() and moved.name.startswith(bad.name + ".discarded-") and moved.read_text().startswith("{")
    assert "w2" not in held_runs(tmp_path)
    text = summary(locate(good.run_id, "w1", tmp_path))
    assert "✓ cordon w1 [done]" in text and "cordoned by the console" in text


@pytest.mark.parametrize(("status", "uid"), [(200, "3f1c-uid"), (403, None), (404, None)])
def test_cluster_identity_reads_kube_system_and_falls_back_to_the_server_url(status, uid):
    """The kubernetes client over real HTTP: GET /api/v1/namespaces/kube-system gives the uid; a user who may not
    read it (403, as RBAC answers: a Status object) is identified by the server URL, and the journal says so."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from kubernetes import client

    from console.runbook.identity import cluster_identity

    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.path)
            body = ({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "kube-system", "uid": uid}}
                    if status == 200 else
                    {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": status,
                     "reason": "Forbidden" if status == 403 else "NotFound",
                     "message": 'namespaces "kube-system" is forbidden: User "dev" cannot get resource'})
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        conf = client.Configuration()
        conf.host = f"http://127.0.0.1:{server.server_port}"
        ident = cluster_identity(client.ApiClient(conf), conf.host)
    finally:
        server.shutdown()
    assert seen == ["/api/v1/namespaces/kube-system"]
    assert ident["server"] == conf.host and ident["kube_system_uid"] == uid
    assert ("API server URL only" in ident["note"]) == (status != 200)
    if status == 403:
        assert "may not read namespace kube-system (403)" in ident["note"]
