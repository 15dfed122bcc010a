"""console/guard.py: read-only first, the audit intent on disk before the call, the outcome after; and the
engine's exactly-once audit of a resumed run (console/runbook/engine.py).

The ordering follows what an audit trail must guarantee (an intent that is not durable does not let the
action happen): the intent is write(2)n and fsync(2)ed before the call, as the journal is (os.fsync, like
SQLite's WAL commit). /dev/full gives ENOSPC on every write (Linux null(4)/full(4) man page).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from console.audit import AuditLog
from console.guard import AuditUnavailable, Guard, ReadOnly
from console.runbook.engine import EXIT_DONE, EXIT_USAGE, Engine, Step
from console.runbook.journal import Journal


def _guard(tmp_path: Path, read_only: bool = False) -> Guard:
    return Guard(read_only=read_only, audit=AuditLog(tmp_path / "state" / "audit.log"))


def test_intent_is_on_disk_and_fsynced_before_the_call_and_outcome_after(tmp_path, monkeypatch):
    guard = _guard(tmp_path)
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    seen = {}
    with guard.mutation("node.cordon", "node/w1", what="cordon of w1", before={"unschedulable": False}) as m:
        # what another process reads at the moment of the call: the intent, already synced
        seen["lines"] = [json.loads(x) for x in guard.audit.path.read_text().splitlines()]
        seen["synced"] = len(synced)
        m.after = {"unschedulable": True}
    [intent] = seen["lines"]
    assert seen["synced"] == 1
    assert intent["phase"] == "intent" and intent["action"] == "node.cordon" and intent["target"] == "node/w1"
    assert intent["before"] == {"unschedulable": False} and "@" in intent["who"] and intent["id"]
    intent2, outcome = guard.audit.entries()
    assert intent2 == intent and len(synced) == 2
    assert (outcome["phase"], outcome["id"], outcome["result"]) == ("outcome", intent["id"], "ok")
    assert outcome["after"] == {"unschedulable": True}


def test_read_only_refuses_before_anything(tmp_path):
    guard = _guard(tmp_path, read_only=True)
    called = []
    with pytest.raises(ReadOnly) as e, guard.mutation("nfd.rule.create", "nodefeaturerule/x",
                                                      what="create of NodeFeatureRule x"):
        called.append(1)
    assert str(e.value) == "read-only: create of NodeFeatureRule x not done"
    assert called == [] and not guard.audit.path.exists()


@pytest.mark.parametrize("make_unwritable", ["dev-full", "dir-is-a-file", "log-is-a-dir"])
def test_unwritable_log_refuses_and_the_call_is_never_made(tmp_path, make_unwritable):
    log = tmp_path / "state" / "audit.log"
    if make_unwritable == "dev-full":  # ENOSPC on write
        log.parent.mkdir()
        log.symlink_to("/dev/full")
    elif make_unwritable == "dir-is-a-file":  # ENOTDIR
        (tmp_path / "state").write_text("")
    else:  # EISDIR (also what EACCES/EROFS come to: open(2) fails, nothing is written)
        log.mkdir(parents=True)
    guard = Guard(read_only=False, audit=AuditLog(log))
    called = []
    with pytest.raises(AuditUnavailable) as e, guard.mutation("nfd.hook.save", "configmap x:h", what="save of h"):
        called.append(1)
    assert called == []
    assert str(log) in str(e.value) and "save of h not done" in str(e.value) and e.value.kind == "audit-unwritable"


def test_failed_call_gets_an_error_outcome_and_the_error_goes_on(tmp_path):
    guard = _guard(tmp_path)
    with pytest.raises(RuntimeError), guard.mutation("a", "t", what="a of t"):
        raise RuntimeError("409 Conflict")
    intent, outcome = guard.audit.entries()
    assert outcome["id"] == intent["id"] and outcome["result"] == "error" and "409" in outcome["error"]


def test_entries_skip_a_torn_or_garbage_line(tmp_path):
    guard = _guard(tmp_path)
    with guard.mutation("a", "t", what="a"):
        pass
    with guard.audit.path.open("a") as f:
        f.write('{"phase": "intent", "id": "x"\n[1, 2]\n\xff garbage\n')
    assert [e["phase"] for e in guard.audit.entries()] == ["intent", "outcome"]
    assert AuditLog(tmp_path / "missing.log").entries() == []


def test_secrets_are_redacted_in_intent_and_outcome(tmp_path):
    guard = _guard(tmp_path)
    with guard.mutation("a", "t", what="a", before={"token": "s3cret"}) as m:
        m.after = {"password": "p4ss", "x": 1}
    text = guard.audit.path.read_text()
    assert "s3cret" not in text and "p4ss" not in text
    assert (guard.audit.path.stat().st_mode & 0o777) == 0o600


# -- the engine: every mutating step through the guard -------------------------------------------------------


class Toy:
    def __init__(self) -> None:
        self.flags: dict[str, bool] = {}
        self.calls: list[str] = []

    def step(self, sid: str, mutating: bool = True) -> Step:
        def act(ctx):
            self.calls.append(sid)
            self.flags[sid] = True

        def undo(ctx):
            self.calls.append(f"undo-{sid}")
            self.flags[sid] = False
            return f"{sid} undone"

        return Step(sid, f"step {sid}", act, done=lambda ctx: self.flags.get(sid, False), undo=undo,
                    mutating=mutating, describe=lambda ctx: {sid: self.flags.get(sid, False)})


def _journal(tmp_path: Path, steps: list[Step]) -> Journal:
    return Journal.create("toy", "n1", {}, [s.as_plan() for s in steps], directory=tmp_path)


def _per_step(audit: AuditLog) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for e in audit.entries():
        out.setdefault(e["action"].rsplit(".", 1)[1], []).append(e["phase"])
    return out


def test_read_only_engine_refuses_the_first_mutating_step_and_changes_nothing(tmp_path):
    toy = Toy()
    steps = [toy.step("check", mutating=False), toy.step("cordon"), toy.step("resize")]
    guard = _guard(tmp_path, read_only=True)
    res = Engine(_journal(tmp_path, steps), steps, guard=guard).run()
    assert (res.status, res.exit_code, res.refusal) == ("refused", EXIT_USAGE, "read-only")
    assert res.message.startswith("read-only: step cordon (toy run ") and "nothing was changed" in res.message
    assert toy.calls == ["check"] and guard.audit.entries() == []
    assert Journal.load(res.run_id, tmp_path).doc["status"] == "refused"  # not resumed later


def test_audit_full_before_the_first_step_refuses_nothing_done(tmp_path):
    log = tmp_path / "audit.log"
    log.symlink_to("/dev/full")
    toy = Toy()
    steps = [toy.step("cordon"), toy.step("resize")]
    res = Engine(_journal(tmp_path, steps), steps, guard=Guard(read_only=False, audit=AuditLog(log))).run()
    assert (res.exit_code, res.refusal) == (EXIT_USAGE, "audit-unwritable")
    assert str(log) in res.message and toy.calls == []
    assert [s["status"] for s in res.steps] == ["pending", "pending"]


def test_audit_lost_after_a_step_stops_resumable_and_the_resume_audits_once(tmp_path):
    """The disk fills while cordon runs: cordon is made, its outcome cannot be written; the run stops (exit 2,
    resumable), resize is not made. The resume (log writable again) writes cordon's missing outcome for its
    intent, then resizes: one intent and one outcome per step."""
    log = tmp_path / "audit.log"
    saved = tmp_path / "audit.saved"
    toy = Toy()
    cordon = toy.step("cordon")
    act = cordon.action

    def cordon_then_disk_full(ctx):
        act(ctx)
        log.rename(saved)
        log.symlink_to("/dev/full")

    cordon.action = cordon_then_disk_full
    steps = [cordon, toy.step("resize")]
    guard = Guard(read_only=False, audit=AuditLog(log))
    res = Engine(_journal(tmp_path, steps), steps, guard=guard).run()
    assert (res.exit_code, res.refusal) == (EXIT_USAGE, "audit-unwritable")
    assert "was done, but its outcome could not be written" in res.message and "resume" in res.message
    assert toy.calls == ["cordon"]
    journal = Journal.load(res.run_id, tmp_path)
    assert journal.doc["status"] == "needs-attention" and journal.step("cordon")["status"] == "acted"
    log.unlink()
    saved.rename(log)
    res = Engine(journal, [toy.step("cordon"), toy.step("resize")], guard=guard).run()
    assert res.exit_code == EXIT_DONE and toy.calls == ["cordon", "resize"]
    assert _per_step(guard.audit) == {"cordon": ["intent", "outcome"], "resize": ["intent", "outcome"]}


def test_resume_writes_the_missing_outcome_once_not_a_second_intent(tmp_path):
    """The interrupted run wrote cordon's intent, cordoned and died before the outcome (journal "acted" with
    the intent id). The resume finds the cordon in place: it writes that intent's outcome, once."""
    guard = _guard(tmp_path)
    toy = Toy()
    steps = [toy.step("cordon"), toy.step("resize")]
    journal = _journal(tmp_path, steps)
    intent = guard.audit.intent("runbook.toy.cordon", "n1", before={"cordon": False}, run_id=journal.run_id)["id"]
    journal.mark("cordon", "started", data={"audit_intent": intent})
    toy.flags["cordon"] = True  # the cordon reached the world
    journal.mark("cordon", "acted")
    res = Engine(Journal.load(journal.run_id, tmp_path), steps, guard=guard).run()
    assert res.exit_code == EXIT_DONE and toy.calls == ["resize"]
    entries = guard.audit.entries()
    cordon = [e for e in entries if e["action"] == "runbook.toy.cordon"]
    assert [(e["phase"], e["id"]) for e in cordon] == [("intent", intent), ("outcome", intent)]
    assert "interrupted run" in cordon[1]["detail"]
    assert _per_step(guard.audit)["resize"] == ["intent", "outcome"]


def test_resume_writes_nothing_for_a_step_whose_outcome_is_there(tmp_path):
    """Killed after the outcome was written but before the journal said "done": no third record."""
    guard = _guard(tmp_path)
    toy = Toy()
    steps = [toy.step("cordon")]
    journal = _journal(tmp_path, steps)
    with guard.mutation("runbook.toy.cordon", "n1", what="cordon", run_id=journal.run_id) as m:
        toy.flags["cordon"] = True
    journal.mark("cordon", "acted", data={"audit_intent": m.id})
    res = Engine(Journal.load(journal.run_id, tmp_path), steps, guard=guard).run()
    assert res.exit_code == EXIT_DONE and toy.calls == []
    assert [e["phase"] for e in guard.audit.entries()] == ["intent", "outcome"]


def test_resume_of_a_step_not_yet_sent_reuses_its_intent(tmp_path):
    """Killed after the intent, before the call reached the world: the resume sends it under that intent."""
    guard = _guard(tmp_path)
    toy = Toy()
    steps = [toy.step("cordon")]
    journal = _journal(tmp_path, steps)
    intent = guard.audit.intent("runbook.toy.cordon", "n1", run_id=journal.run_id)["id"]
    journal.mark("cordon", "started", data={"audit_intent": intent})
    res = Engine(Journal.load(journal.run_id, tmp_path), steps, guard=guard).run()
    assert res.exit_code == EXIT_DONE and toy.calls == ["cordon"]
    assert [(e["phase"], e["id"]) for e in guard.audit.entries()] == [("intent", intent), ("outcome", intent)]


def test_undo_goes_through_the_guard(tmp_path):
    guard = _guard(tmp_path)
    toy = Toy()
    fail = Step("verify", "verify", lambda ctx: None, mutating=False, verify=lambda ctx: "no",
                done=lambda ctx: False)
    steps = [toy.step("cordon"), fail]
    res = Engine(_journal(tmp_path, steps), steps, guard=guard).run()
    assert res.status == "failed" and toy.calls == ["cordon", "undo-cordon"]
    phases = [(e["phase"], e["result"]) for e in guard.audit.entries()]
    assert phases == [("intent", "pending"), ("outcome", "ok"), ("intent", "pending"), ("outcome", "undone")]
