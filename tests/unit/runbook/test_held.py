"""What an unfinished run's journal says about its node (console/runbook/held.py), and finding those runs."""

from __future__ import annotations

from console.runbook.held import held_runs, held_state
from console.runbook.journal import Journal

RESIZE = ["cordon", "drain", "resize", "wait-verify-resize", "confirm-resize", "wait-node", "uncordon", "verify-pods"]


def _doc(statuses: dict[str, str], steps: list[str] = RESIZE, **context) -> dict:
    return {"steps": [{"id": s, "status": statuses.get(s, "pending")} for s in steps], "context": context}


def test_state_follows_the_journaled_steps():
    assert held_state(_doc({})) == "not cordoned"
    assert held_state(_doc({"cordon": "done"}, was_cordoned=False)) == "cordoned by the console"
    assert held_state(_doc({"cordon": "done"}, was_cordoned=True)) == "cordoned (as it was before the run)"
    waiting = {"cordon": "done", "drain": "done", "resize": "done", "wait-verify-resize": "done"}
    assert held_state(_doc(waiting)) == "cordoned by the console, its server in VERIFY_RESIZE (resize not confirmed)"
    assert held_state(_doc({**waiting, "wait-verify-resize": "started"})).endswith("its server resizing")
    done = dict.fromkeys(RESIZE[:-1], "done")
    assert held_state(_doc(done)) == "uncordoned"


def test_held_runs_lists_only_unfinished_journals(tmp_path):
    steps = [{"id": s, "title": s, "mutating": True} for s in RESIZE]
    a = Journal.create("scale-up", "w1", {}, steps, directory=tmp_path)
    a.mark("cordon", "done")
    a.finish("interrupted", "interrupted before drain")
    Journal.create("scale-up", "w2", {}, steps, directory=tmp_path).finish("done")
    (tmp_path / "broken.json").write_text("{not json")
    runs = held_runs(tmp_path)
    assert list(runs) == ["w1"]
    [run] = runs["w1"]
    assert (run.run_id, run.status, run.state) == (a.run_id, "interrupted", "cordoned by the console")
    assert run.resume_command == f"python -m console scale-up w1 --resume {a.run_id}"
