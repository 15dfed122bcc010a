"""Signal a console process the moment its run journal records a step: the crash and interrupt tests' follower.

`python journalsignal.py ARGS...` runs `python -m console ARGS...` unchanged (`--script FILE ARGS...`:
that script), with a Python audit hook
(PEP 578, https://docs.python.org/3/library/sys.html#sys.addaudithook) that follows the journal writes:
console/runbook/journal.py rewrites a journal atomically (write a temp file, `os.replace` it over the journal,
fsync the directory); when the replacing file records the awaited step, the process sends itself the signal
right after the rename, before it does anything else. That is the exact boundary "the journal records
<step> done" (or "<step>:acted": after the action, before verification), with no test hook in product code
and no race with a poller on a loaded machine.

The awaited record and the signal come from JOURNAL_SIGNAL="<step>[:acted][@NODE]=<SIGKILL|SIGINT|SIGTERM>"
(a fleet run writes several node journals: `@NODE` waits for that node's).
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
from pathlib import Path
from typing import Any

ENV = "JOURNAL_SIGNAL"
SCRIPT = Path(__file__)


def reached(doc: dict[str, Any], case: str) -> bool:
    """Does journal `doc` record `case` ("<step>": done or skipped; "<step>:acted": the action returned;
    "<step>:started": the step began)? "...@NODE": only a journal of NODE's run counts. A fleet journal
    (console/runbook/fleet_journal.py) records "<node>" when that node is done."""
    case, _, node = case.partition("@")
    if node and doc.get("node") != node:
        return False
    step, _, phase = case.partition(":")
    if doc.get("kind") == "fleet":
        return any(n.get("node") == step and n.get("status") == "done" for n in doc.get("nodes", []))
    want = {"acted": ("acted", "done", "skipped"), "started": ("started", "acted", "done", "skipped")}.get(
        phase, ("done", "skipped"))
    return any(s["id"] == step and s["status"] in want for s in doc.get("steps", []))


def command(*args: str, script: Path | None = None) -> list[str]:
    """The argv that runs `python -m console ARGS` (or `python SCRIPT ARGS`) under the follower."""
    return [sys.executable, str(SCRIPT), *(["--script", str(script)] if script else []), *args]


def env(case: str, sig: str = "SIGKILL") -> dict[str, str]:
    return {ENV: f"{case}={sig}"}


def install(spec: str) -> None:
    case, _, name = spec.rpartition("=")
    signum = signal.Signals[name]
    state = {"busy": False, "armed": "", "fired": False}

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if state["busy"] or state["fired"]:
            return
        if event == "os.rename" and str(args[0]).endswith(".json.tmp"):  # Journal.save's temp file
            state["busy"] = True  # reading the file raises audit events of its own
            try:
                doc = json.loads(Path(str(args[0])).read_text())
            except (OSError, ValueError):
                doc = {}
            finally:
                state["busy"] = False
            if reached(doc, case):
                state["armed"] = str(Path(str(args[1])).parent)
        elif event == "open" and state["armed"] and str(args[0]) == state["armed"]:
            # the journal's directory is opened for its fsync: the rename is done, the step is on disk
            state["fired"] = True
            os.kill(os.getpid(), signum)

    sys.addaudithook(hook)


if __name__ == "__main__":
    if os.environ.get(ENV):
        install(os.environ[ENV])
    if sys.argv[1:2] == ["--script"]:
        sys.argv = sys.argv[2:]
        runpy.run_path(sys.argv[0], run_name="__main__")
    else:
        sys.argv = ["console", *sys.argv[1:]]
        runpy.run_module("console", run_name="__main__", alter_sys=True)
