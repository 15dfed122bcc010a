"""The step engine on a toy world (a dict, or a JSON file for the crash tests): order, idempotency,
preconditions, verification, undo, failure kinds, resume from every recorded status, audit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import threading
from pathlib import Path

import journalsignal
import pytest

from console.audit import AuditLog
from console.guard import Guard
from console.runbook.engine import (
    EXIT_ATTENTION,
    EXIT_DONE,
    EXIT_FAILED,
    EXIT_VERIFY,
    Engine,
    Step,
    StepFailed,
    describe_error,
)
from console.runbook.interrupt import Interrupted, StopFlag, stop_on_signals
from console.runbook.journal import Journal


class World:
    """A toy system: named flags, and a log of every mutation the steps send."""

    def __init__(self) -> None:
        self.flags: dict[str, bool] = {}
        self.calls: list[str] = []

    def step(self, sid: str, **kw) -> Step:
        def act(ctx):
            self.calls.append(sid)
            self.flags[sid] = True
            return {"set": sid}

        def undo(ctx):
            self.calls.append(f"undo-{sid}")
            self.flags[sid] = False
            return f"{sid} undone"

        kw.setdefault("done", lambda ctx: self.flags.get(sid, False))
        kw.setdefault("undo", undo)
        kw.setdefault("describe", lambda ctx: {sid: self.flags.get(sid, False)})
        return Step(sid, f"step {sid}", kw.pop("action", act), **kw)


def _guard(d: Path) -> Guard:
    return Guard(read_only=False, audit=AuditLog(d / "audit.log"))


def outcomes(audit: AuditLog) -> list[dict]:
    """The outcome records, each after its intent with the same id (console/guard.py)."""
    entries = audit.entries()
    intents = {e["id"]: i for i, e in enumerate(entries) if e["phase"] == "intent"}
    out = [e for e in entries if e["phase"] == "outcome"]
    assert all(intents[e["id"]] < entries.index(e) for e in out)
    assert len(intents) == len(out)
    return out


@pytest.fixture
def env(tmp_path):
    audit = AuditLog(tmp_path / "audit.log")

    def make(steps: list[Step], journal: Journal | None = None, events: list | None = None) -> Engine:
        j = journal or Journal.create("toy", "node-1", {"x": 1}, [s.as_plan() for s in steps], directory=tmp_path)
        return Engine(j, steps, guard=Guard(read_only=False, audit=audit),
                      on_event=(events.append if events is not None else None))

    return make, audit


def test_runs_in_order_journals_and_audits_mutations(env):
    make, audit = env
    w = World()
    events: list = []
    steps = [w.step("a"), w.step("b"), w.step("check", mutating=False, undo=None)]
    res = make(steps, events=events).run()
    assert (res.status, res.exit_code) == ("done", EXIT_DONE)
    assert w.calls == ["a", "b", "check"]
    assert [s["status"] for s in res.steps] == ["done", "done", "done"]
    assert [e["action"] for e in outcomes(audit)] == ["runbook.toy.a", "runbook.toy.b"]
    intent, outcome = audit.entries()[:2]
    assert intent["before"] == {"a": False} and outcome["after"] == {"a": True} and outcome["run_id"] == res.run_id
    assert (intent["phase"], outcome["phase"], intent["id"]) == ("intent", "outcome", outcome["id"])
    assert next(s for s in res.steps if s["id"] == "a")["data"]["audit_intent"] == intent["id"]
    kinds = [e.kind for e in events]
    assert kinds[0] == "run-start" and kinds[-1] == "run-done"
    assert kinds.count("step-start") == 3 and kinds.count("step-done") == 3
    assert Journal.load(res.run_id, Path(res.journal_path).parent).doc["status"] == "done"


def test_effect_already_there_is_skipped_not_repeated(env):
    make, audit = env
    w = World()
    w.flags["a"] = True
    res = make([w.step("a"), w.step("b")]).run()
    assert w.calls == ["b"]
    assert [s["status"] for s in res.steps] == ["skipped", "done"]
    assert [e["action"] for e in outcomes(audit)] == ["runbook.toy.b"]


def test_precondition_failure_undoes_completed_steps_in_reverse(env):
    make, _ = env
    w = World()
    steps = [w.step("a"), w.step("b"), w.step("c", precondition=lambda ctx: "the VM is off")]
    res = make(steps).run()
    assert (res.status, res.exit_code) == ("failed", EXIT_FAILED)
    assert "step c: precondition not met: the VM is off" in res.message
    assert "Rolled back: b undone; a undone" in res.message
    assert w.calls == ["a", "b", "undo-b", "undo-a"]
    assert [s["status"] for s in res.steps] == ["undone", "undone", "failed"]


def test_failed_verification_is_audited_as_error_and_rolled_back(env):
    make, audit = env
    w = World()
    steps = [w.step("a"), w.step("b", verify=lambda ctx: "capacity still 2 CPU", undo=None)]
    res = make(steps).run()
    assert res.exit_code == EXIT_FAILED and "capacity still 2 CPU" in res.message
    assert [(e["action"], e["result"]) for e in outcomes(audit)] == [
        ("runbook.toy.a", "ok"), ("runbook.toy.b", "error"), ("runbook.toy.a", "undone")]


def test_verify_failure_keeps_the_change(env):
    make, _ = env
    w = World()

    def pods(ctx):
        raise StepFailed("default/nginx still Pending: Insufficient cpu", verify=True)

    res = make([w.step("a"), w.step("pods", action=pods, mutating=False)]).run()
    assert (res.status, res.exit_code) == ("verify-failed", EXIT_VERIFY)
    assert "undo-a" not in w.calls and w.flags["a"]


def test_resumable_failure_stops_without_undo_and_says_how_to_resume(env):
    make, _ = env
    w = World()

    def api_down(ctx):
        raise StepFailed("waiting for VERIFY_RESIZE: OpenStack API unreachable", resumable=True)

    res = make([w.step("a"), w.step("wait", action=api_down)]).run()
    assert (res.status, res.exit_code) == ("needs-attention", EXIT_ATTENTION)
    assert "Nothing was rolled back" in res.message and res.run_id in res.message
    assert w.calls == ["a"]


def test_unexpected_error_is_reported_and_the_run_stays_resumable(env, tmp_path):
    make, _ = env
    w = World()
    boom = {"on": True}

    def flaky(ctx):
        if boom["on"]:
            raise ConnectionRefusedError("[Errno 111] Connection refused")
        w.calls.append("b")
        w.flags["b"] = True

    steps = [w.step("a"), w.step("b", action=flaky)]
    res = make(steps).run()
    assert res.exit_code == EXIT_ATTENTION and "Connection refused" in res.message
    assert "ConnectionRefusedError" not in res.message  # said in words (issue 20), not by class
    assert w.calls == ["a"]
    j = Journal.unfinished("toy", "node-1", tmp_path)
    assert [x.run_id for x in j] == [res.run_id]
    boom["on"] = False
    res2 = make([w.step("a"), w.step("b", action=flaky)], journal=j[0]).run()
    assert res2.exit_code == EXIT_DONE and w.calls == ["a", "b"]


def test_failed_undo_needs_attention(env):
    make, _ = env
    w = World()

    def bad_undo(ctx):
        raise StepFailed("revert failed: 409 Conflict")

    steps = [w.step("a", undo=bad_undo), w.step("b", precondition=lambda ctx: "no")]
    res = make(steps).run()
    assert (res.status, res.exit_code) == ("needs-attention", EXIT_ATTENTION)
    assert "undo failed: revert failed: 409 Conflict" in res.message


@pytest.mark.parametrize(("status", "effect_there", "acts", "audited"), [
    ("pending", False, True, True),
    ("started", False, True, True),   # killed before the action reached the world: send it
    ("started", True, False, True),   # killed after the action, before "acted": check finds it, no repeat
    ("acted", True, False, True),
    ("failed", False, True, True),
    ("undone", False, True, True),
    ("done", True, False, False),     # recorded done: not even checked again
    ("skipped", True, False, False),
])
def test_resume_from_each_recorded_status(env, status, effect_there, acts, audited):
    make, audit = env
    w = World()
    w.flags["a"] = True
    w.flags["b"] = effect_there
    checked = []
    steps = [w.step("a"), w.step("b", done=lambda ctx: checked.append(1) or w.flags["b"]), w.step("c")]
    j = Journal.create("toy", "node-1", {}, [s.as_plan() for s in steps], directory=audit.path.parent)
    j.mark("a", "done")
    j.mark("b", status)
    res = make(steps, journal=j).run()
    assert res.exit_code == EXIT_DONE
    assert ("b" in w.calls) == acts
    assert bool(checked) == (status not in ("done", "skipped"))
    b_audit = [e for e in audit.entries() if e["action"] == "runbook.toy.b"]
    assert bool(b_audit) == audited
    if status in ("started", "acted") and effect_there:
        assert "earlier, interrupted run" in b_audit[0]["detail"]


CRASH_SCRIPT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from console.audit import AuditLog
    from console.guard import Guard
    from console.runbook.engine import Engine, Step
    from console.runbook.interrupt import StopFlag, stop_on_signals
    from console.runbook.journal import Journal

    d = Path(sys.argv[1]); world = d / "world.json"
    state = json.loads(world.read_text()) if world.exists() else {"flags": {}, "calls": []}

    def save():
        world.write_text(json.dumps(state))

    def step(sid):
        def act(ctx):
            state["calls"].append(sid); state["flags"][sid] = True; save()
        return Step(sid, sid, act, done=lambda ctx: state["flags"].get(sid, False))

    steps = [step("a"), step("b"), step("c")]
    found = Journal.unfinished("toy", "n", d)
    j = found[0] if found else Journal.create("toy", "n", {}, [s.as_plan() for s in steps], directory=d)
    stop = StopFlag()
    with stop_on_signals(stop):
        res = Engine(j, steps, guard=Guard(read_only=False, audit=AuditLog(d / "audit.log")), stop=stop).run()
    print(res.status, res.stopped_at)
    sys.exit(res.exit_code)
""")
BOUNDARIES = ["a:acted", "a", "b:acted", "b", "c:acted", "c"]


def _toy(tmp_path: Path, case: str = "", sig: str = "SIGKILL") -> subprocess.CompletedProcess:
    """The toy runbook in a subprocess; with `case`, sent `sig` the moment its journal records `case`
    (tests/support/journalsignal.py)."""
    script = tmp_path / "toy.py"
    script.write_text(CRASH_SCRIPT)
    env = dict(os.environ, **(journalsignal.env(case, sig) if case else {}))
    return subprocess.run(journalsignal.command(str(tmp_path), script=script), env=env, capture_output=True,
                          text=True, timeout=60)


def _toy_finished_once(tmp_path: Path) -> None:
    state = json.loads((tmp_path / "world.json").read_text())
    assert state["calls"] == ["a", "b", "c"]  # each mutation sent exactly once across both processes
    [journal] = [json.loads(p.read_text()) for p in tmp_path.glob("toy-*.json")]
    assert journal["status"] == "done"
    # each step audited exactly once across both processes: one intent, then one outcome with its id
    audit = AuditLog(tmp_path / "audit.log")
    assert sorted(e["action"] for e in outcomes(audit)) == ["runbook.toy.a", "runbook.toy.b", "runbook.toy.c"]
    assert sorted(e["action"] for e in audit.entries() if e["phase"] == "intent") == [
        "runbook.toy.a", "runbook.toy.b", "runbook.toy.c"]


@pytest.mark.parametrize("crash", BOUNDARIES)
def test_killed_at_each_boundary_resumes_without_repeating(tmp_path, crash):
    first = _toy(tmp_path, crash)
    assert first.returncode == -signal.SIGKILL, first.stderr
    [journal] = [json.loads(p.read_text()) for p in tmp_path.glob("toy-*.json")]
    assert journal["status"] == "running" and journalsignal.reached(journal, crash)
    step = crash.partition(":")[0]
    assert next(s for s in journal["steps"] if s["id"] == step)["status"] == ("acted" if ":" in crash else "done")
    second = _toy(tmp_path)
    assert second.returncode == 0, second.stderr
    _toy_finished_once(tmp_path)


@pytest.mark.parametrize("case", BOUNDARIES)
def test_sigint_at_each_boundary_stops_before_the_next_step(tmp_path, case):
    """SIGINT sets the stop flag; the step in hand finishes, the run stops before the next one (exit 4,
    journal "interrupted"), no traceback; the rerun resumes and finishes."""
    first = _toy(tmp_path, case, "SIGINT")
    step = case.partition(":")[0]
    nxt = {"a": "b", "b": "c", "c": ""}[step]
    if not nxt:  # the last step's record: nothing is left to stop
        assert first.returncode == 0, first.stderr
    else:
        assert first.returncode == EXIT_ATTENTION, first.stderr
        assert first.stdout.split() == ["interrupted", "before", nxt] and "Traceback" not in first.stderr
        [journal] = [json.loads(p.read_text()) for p in tmp_path.glob("toy-*.json")]
        assert journal["status"] == "interrupted"
        assert [s["status"] for s in journal["steps"]].count("pending") == 3 - "abc".index(nxt)
        second = _toy(tmp_path)
        assert second.returncode == 0, second.stderr
    _toy_finished_once(tmp_path)


def test_stop_before_a_step_ends_the_run_interrupted_and_resumable(tmp_path):
    w = World()
    stop = threading.Event()
    b = w.step("b")
    act_b = b.action

    def b_then_stop(ctx):
        stop.set()  # as a signal handler would, while b runs: b finishes, c does not start
        return act_b(ctx)

    b.action = b_then_stop
    steps = [w.step("a"), b, w.step("c")]
    j = Journal.create("toy", "n", {}, [s.as_plan() for s in steps], directory=tmp_path)
    res = Engine(j, steps, guard=_guard(tmp_path), stop=stop).run()
    assert (res.status, res.exit_code, res.stopped_at) == ("interrupted", EXIT_ATTENTION, "before c")
    assert w.calls == ["a", "b"] and j.doc["status"] == "interrupted"
    assert [s["status"] for s in j.doc["steps"]] == ["done", "done", "pending"]
    [again] = Journal.unfinished("toy", "n", tmp_path)
    res = Engine(again, [w.step("a"), w.step("b"), w.step("c")], guard=_guard(tmp_path)).run()
    assert res.status == "done" and w.calls == ["a", "b", "c"]


def test_signal_cuts_a_breakable_wait_and_a_second_one_stops_at_once(tmp_path):
    """In a breakable wait the first SIGINT ends the step at once (it stays "started": resuming waits again);
    outside one, a second SIGINT stops at once (Interrupted, never KeyboardInterrupt)."""
    def waits(ctx):
        with ctx.breakable():
            signal.raise_signal(signal.SIGINT)
            ctx.sleep(60)  # not reached: the handler raised
        raise AssertionError("the wait was not cut")

    def sleeps(ctx):
        ctx.stop.set()  # as the handler does outside a breakable wait
        ctx.sleep(60)  # a backoff sleep: returns at once with Interrupted

    for action, stopped in ((waits, "during w"), (sleeps, "during w")):
        stop = StopFlag()
        steps = [Step("w", "wait", action, mutating=False)]
        j = Journal.create("toy", "n", {}, [s.as_plan() for s in steps], directory=tmp_path)
        with stop_on_signals(stop):
            res = Engine(j, steps, guard=_guard(tmp_path), stop=stop).run()
        assert (res.status, res.stopped_at, j.step("w")["status"]) == ("interrupted", stopped, "started")
    stop = StopFlag()
    before = signal.getsignal(signal.SIGINT)
    with stop_on_signals(stop), pytest.raises(Interrupted):
        signal.raise_signal(signal.SIGINT)  # first: only sets the flag
        assert stop.is_set()
        signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before  # handlers restored


def test_describe_error_prefers_http_status():
    class ApiError(Exception):
        status, reason = 503, "Service Unavailable"

    said = describe_error(ApiError("HTTP response headers: ...long..."))
    assert said == "the server answered HTTP 503 Service Unavailable"
    assert describe_error(OSError("line one\nline two")) == "line one"
