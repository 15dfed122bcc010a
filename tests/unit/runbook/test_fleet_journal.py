"""The fleet journal: its shape is checked before a fleet is resumed (a bad file is named, never skipped), it is
written atomically beside the node runs' journals, and the node runbooks' scans never take it for one of theirs."""

from __future__ import annotations

import copy
import json

import pytest

from console.runbook.fleet_journal import FleetJournal, FleetJournalError, node_entry, problem, read_fleet_doc
from console.runbook.journal import Journal

CLUSTER = {"server": "https://k:6443", "kube_system_uid": "u-1", "note": ""}
PLAN = {"nodes": [], "placements": {"default/a": "w1"}, "unplaceable": [], "cost": 6.0, "optimal": True}


def _nodes() -> list[dict]:
    return [node_entry("w1", "srv-1", "openstack", "cmp001", "m1.large", 8, 12288),
            node_entry("w2", "dom-2", "libvirt", "cmp002", None, 4, 8192)]


def _journal(tmp_path) -> FleetJournal:
    return FleetJournal.create_fleet(PLAN, _nodes(), {"parallel": 1, "max_unavailable": 1}, cluster=CLUSTER,
                                     directory=tmp_path)


def test_created_journal_reads_back_and_is_a_valid_shape(tmp_path):
    j = _journal(tmp_path)
    assert j.run_id.startswith("fleet-") and j.path == tmp_path / f"{j.run_id}.json"
    assert [p.name for p in tmp_path.iterdir()] == [j.path.name]  # no temp file left behind
    doc = read_fleet_doc(j.path)
    assert doc["kind"] == "fleet" and doc["status"] == "running" and doc["plan"] == PLAN
    assert doc["cluster"] == CLUSTER and [n["status"] for n in doc["nodes"]] == ["pending", "pending"]
    assert problem(doc, j.run_id) is None


def test_mark_node_records_status_run_id_and_times(tmp_path):
    j = _journal(tmp_path)
    j.mark_node("w1", "running", run_id="scale-up-w1-20261202T000000-abcd")
    j.mark_node("w1", "done", message="ok", exit_code=0)
    n = FleetJournal.load_fleet(j.run_id, tmp_path).node("w1")
    assert (n["status"], n["run_id"], n["exit_code"], n["message"]) == (
        "done", "scale-up-w1-20261202T000000-abcd", 0, "ok")
    assert n["started"] and n["finished"]


def test_unfinished_fleets_are_the_running_interrupted_and_attention_ones(tmp_path):
    a, b, c, d = (_journal(tmp_path) for _ in range(4))
    b.finish("done")
    c.finish("needs-attention", "a PDB")
    d.finish("failed")
    assert {j.run_id for j in FleetJournal.unfinished_fleets(tmp_path)} == {a.run_id, c.run_id}


def test_node_runbook_scans_never_see_a_fleet_journal(tmp_path):
    _journal(tmp_path)
    good, bad = Journal.scan(tmp_path)
    assert good == [] and bad == []


@pytest.mark.parametrize(("edit", "why"), [
    (lambda d: d.pop("nodes"), "nodes is missing"),
    (lambda d: d.update(nodes=[]), "nodes is empty"),
    (lambda d: d.update(status="half"), "status is 'half', expected one of"),
    (lambda d: d.update(kind="scale-up"), "kind is 'scale-up', expected 'fleet'"),
    (lambda d: d.update(version=7), "version-7 fleet journal"),
    (lambda d: d["nodes"][0].update(status="maybe"), "nodes[0].status is 'maybe'"),
    (lambda d: d["nodes"][0].update(vcpus="8"), "nodes[0].vcpus is '8', expected an integer"),
    (lambda d: d["nodes"][0].update(flavor=None), "nodes[0].flavor is missing: an OpenStack resize needs"),
    (lambda d: d["nodes"][1].update(method="ssh"), "nodes[1].method is 'ssh'"),
    (lambda d: d["nodes"].append(copy.deepcopy(d["nodes"][0])), "node 'w1' appears twice"),
    (lambda d: d["cluster"].pop("server"), "cluster.server is missing"),
    (lambda d: d["params"].update(parallel=True), "params.parallel is True, expected an integer"),
])
def test_each_shape_fault_is_named(tmp_path, edit, why):
    doc = json.loads(_journal(tmp_path).path.read_text())
    edit(doc)
    assert why in (problem(doc) or "")


@pytest.mark.parametrize("content", ["", "{not json", "[]", '{"version": 1}'])
def test_a_bad_fleet_file_is_refused_naming_it_and_how_to_move_it_aside(tmp_path, content):
    path = tmp_path / "fleet-20261202T000000-beef.json"
    path.write_text(content)
    with pytest.raises(FleetJournalError) as e:
        FleetJournal.unfinished_fleets(tmp_path)
    assert str(path) in str(e.value) and f"mv {path} {path}.discarded" in str(e.value)


def test_a_run_id_that_is_not_a_fleet_id_is_refused(tmp_path):
    with pytest.raises(FleetJournalError, match="is not a fleet run id"):
        FleetJournal.load_fleet("scale-up-w1-20261202T000000-abcd", tmp_path)
    with pytest.raises(FleetJournalError, match="no fleet journal"):
        FleetJournal.load_fleet("fleet-20261202T000000-abcd", tmp_path)
