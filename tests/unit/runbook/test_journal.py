"""The runbook journal: atomic writes, reload, finding unfinished runs, clear errors on bad files."""

from __future__ import annotations

import json
import stat

import pytest

from console.runbook.journal import Journal, JournalError

STEPS = [{"id": "a", "title": "A", "mutating": True}, {"id": "b", "title": "B", "mutating": False}]


def test_create_save_load_roundtrip_is_private_and_atomic(tmp_path):
    j = Journal.create("scale-up", "w1", {"flavor": "m1.large"}, STEPS, directory=tmp_path)
    j.mark("a", "started")
    j.mark("a", "acted", data={"request_id": "req-1"})
    assert [p.name for p in tmp_path.iterdir()] == [f"{j.run_id}.json"]  # no temp file left behind
    assert stat.S_IMODE(j.path.stat().st_mode) == 0o600
    again = Journal.load(j.run_id, tmp_path)
    assert again.step("a")["status"] == "acted" and again.step("a")["data"] == {"request_id": "req-1"}
    assert again.step("a")["started"] and again.doc["params"] == {"flavor": "m1.large"}


def test_unfinished_finds_running_and_attention_runs_for_the_node_only(tmp_path):
    running = Journal.create("scale-up", "w1", {}, STEPS, directory=tmp_path)
    attention = Journal.create("scale-up", "w1", {}, STEPS, directory=tmp_path)
    attention.finish("needs-attention", "kubelet down")
    Journal.create("scale-up", "w1", {}, STEPS, directory=tmp_path).finish("done")
    Journal.create("scale-up", "w1", {}, STEPS, directory=tmp_path).finish("failed")
    Journal.create("scale-up", "w2", {}, STEPS, directory=tmp_path)
    (tmp_path / "scale-up-w1-corrupt.json").write_text("{not json")
    found = {j.run_id for j in Journal.unfinished("scale-up", "w1", tmp_path)}
    assert found == {running.run_id, attention.run_id}


def test_corrupt_or_foreign_journal_gives_a_clear_error(tmp_path):
    (tmp_path / "scale-up-w1-x.json").write_text('{"version": 1, "steps": [')
    with pytest.raises(JournalError, match=r"cannot be read.*move it aside"):
        Journal.load("scale-up-w1-x", tmp_path)
    (tmp_path / "scale-up-w1-y.json").write_text(json.dumps({"hello": "world"}))
    with pytest.raises(JournalError, match="not a version-1 runbook journal"):
        Journal.load("scale-up-w1-y", tmp_path)
    with pytest.raises(FileNotFoundError, match="no runbook journal"):
        Journal.load("scale-up-w1-missing", tmp_path)
    with pytest.raises(JournalError, match="not a run id"):
        Journal.load("../../etc/passwd", tmp_path)


def test_set_steps_keeps_recorded_state_when_the_plan_is_rebuilt(tmp_path):
    j = Journal.create("scale-up", "w1", {}, STEPS, directory=tmp_path)
    j.mark("a", "done")
    j.set_steps([*STEPS, {"id": "c", "title": "C", "mutating": True}])
    assert [(s["id"], s["status"]) for s in j.doc["steps"]] == [("a", "done"), ("b", "pending"), ("c", "pending")]
