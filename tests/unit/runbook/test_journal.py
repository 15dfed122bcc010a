"""The runbook journal: atomic writes, reload, finding unfinished runs, clear errors on bad files (never skipped)."""

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
    (tmp_path / "scale-up-w2-20261201T000000-beef.json").write_text("{not json")  # another node's: not ours
    found = {j.run_id for j in Journal.unfinished("scale-up", "w1", tmp_path)}
    assert found == {running.run_id, attention.run_id}


def test_a_bad_journal_of_the_node_is_never_skipped(tmp_path):
    """Issue 9: a truncated journal was skipped and the next run adopted the half-done state."""
    Journal.create("scale-up", "w1", {}, STEPS, directory=tmp_path)
    bad = tmp_path / "scale-up-w1-20261201T000000-beef.json"
    bad.write_text('{"version": 2, "steps": [')
    with pytest.raises(JournalError) as e:
        Journal.unfinished("scale-up", "w1", tmp_path)
    assert str(bad) in str(e.value) and "not valid JSON" in str(e.value)
    assert "scale-up w1 --discard scale-up-w1-20261201T000000-beef" in str(e.value)
    assert e.value.path == bad and e.value.run_id == bad.stem
    # a file whose name names no node may be any node's: it refuses too, named by its file name
    bad.unlink()
    odd = tmp_path / "scale-up-garbage.json"
    odd.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(JournalError, match=r"scale-up-garbage\.json .*--discard scale-up-garbage"):
        Journal.unfinished("scale-up", "w1", tmp_path)
    assert Journal.unfinished("revert", "w1", tmp_path) == []  # another kind's files are not read


def test_corrupt_wrong_shaped_or_old_journal_gives_a_clear_error(tmp_path):
    (tmp_path / "scale-up-w1-x.json").write_text('{"version": 2, "steps": [')
    with pytest.raises(JournalError, match=r"w1-x\.json is not valid JSON, truncated.*--discard scale-up-w1-x"):
        Journal.load("scale-up-w1-x", tmp_path)
    (tmp_path / "scale-up-w1-y.json").write_text(json.dumps({"hello": "world"}))
    with pytest.raises(JournalError, match="not a usable runbook journal: version is missing"):
        Journal.load("scale-up-w1-y", tmp_path)
    j = Journal.create("scale-up", "w1", {}, STEPS, directory=tmp_path)
    j.doc["version"] = 1
    j.save()
    with pytest.raises(JournalError, match="is a version-1 journal; this console reads version 2"):
        Journal.load(j.run_id, tmp_path)
    (tmp_path / "scale-up-w1-e.json").write_text("")
    with pytest.raises(JournalError, match=r"is empty \(truncated\)"):
        Journal.load("scale-up-w1-e", tmp_path)
    with pytest.raises(FileNotFoundError, match="no runbook journal"):
        Journal.load("scale-up-w1-missing", tmp_path)
    with pytest.raises(JournalError, match="not a run id"):
        Journal.load("../../etc/passwd", tmp_path)


def test_two_writers_never_share_a_temp_file(tmp_path, monkeypatch):
    """Issue 9: two processes raced on the same `<run>.json.tmp`; each save now writes a temp file of its own."""
    import os

    j = Journal.create("scale-up", "w1", {}, STEPS, directory=tmp_path)
    seen = []
    real = os.replace

    def spy(src, dst):
        seen.append(os.path.basename(src))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    j.save()
    j.save()
    monkeypatch.undo()
    assert len(set(seen)) == 2 and all(n.startswith(j.run_id + ".") and n.endswith(".json.tmp") for n in seen)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{j.run_id}.json"]


def test_set_steps_keeps_recorded_state_when_the_plan_is_rebuilt(tmp_path):
    j = Journal.create("scale-up", "w1", {}, STEPS, directory=tmp_path)
    j.mark("a", "done")
    j.set_steps([*STEPS, {"id": "c", "title": "C", "mutating": True}])
    assert [(s["id"], s["status"]) for s in j.doc["steps"]] == [("a", "done"), ("b", "pending"), ("c", "pending")]
