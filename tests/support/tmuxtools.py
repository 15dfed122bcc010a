"""A real terminal for end-to-end tests: the console in a tmux pane, driven by `send-keys` and read with
`capture-pane`, as a user at that terminal sees it (tests/e2e)."""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# box drawing and block elements: panel borders, scrollbars, the toast's left edge
_FRAME = re.compile(r"[\u2500-\u259f]")


def flat(screen: str) -> str:
    """The screen's text with frames removed and lines joined: a phrase the terminal wrapped reads whole."""
    return " ".join(_FRAME.sub(" ", screen).split())


class Tmux:
    """One tmux server (its own socket) with one session running one command in a width×height pane."""

    def __init__(self, tmp: Path, *, width: int = 80, height: int = 24, env: Mapping[str, str] | None = None) -> None:
        self.socket = f"console-e2e-{uuid.uuid4().hex[:8]}"
        self.session = "console"
        self.width, self.height = width, height
        self.env = {**os.environ, "XDG_CONFIG_HOME": str(tmp / "cfg"), "XDG_DATA_HOME": str(tmp / "data"),
                    "XDG_STATE_HOME": str(tmp / "state"), "TERM": "xterm-256color", **(env or {})}

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, env=self.env,
                              timeout=20).stdout

    def start(self, command: str) -> None:
        subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-s", self.session,
                        "-x", str(self.width), "-y", str(self.height), command],
                       check=True, env=self.env, cwd=REPO, timeout=20)
        self.tmux("set-option", "-t", self.session, "remain-on-exit", "on")

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.session)

    def cursor(self) -> tuple[int, int]:
        """Where the terminal's cursor is (column, row): Textual puts it on the focused text widget's cursor."""
        where = self.tmux("display-message", "-p", "-t", self.session, "#{cursor_x},#{cursor_y}")
        x, _, y = where.strip().partition(",")
        return int(x), int(y)

    def at_cursor(self) -> tuple[str, str]:
        """The cursor's screen line, split at the cursor: (before, from the cursor on)."""
        x, y = self.cursor()
        lines = self.screen().splitlines()
        line = lines[y] if y < len(lines) else ""
        return line[:x], line[x:]

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", self.session, *(["-l", "--"] if literal else []), *keys)

    def type(self, text: str) -> None:
        """Type `text` as it is (no key names)."""
        self.keys(text, literal=True)

    def dead(self) -> bool:
        return self.tmux("display-message", "-p", "-t", self.session, "#{pane_dead}").strip() == "1"

    def wait(self, predicate: Callable[[str], bool], timeout: float, what: str) -> str:
        """The first screen `predicate` accepts; an AssertionError showing the last screen after `timeout`."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if predicate(text):
                return text
            time.sleep(0.2)
        raise AssertionError(f"timed out after {timeout:g}s waiting for {what}; screen:\n{text}")

    def wait_text(self, *phrases: str, timeout: float = 20, what: str = "") -> str:
        """The first screen that shows every phrase (across the terminal's line wraps)."""
        what = what or " and ".join(map(repr, phrases))
        return self.wait(lambda s: all(p in flat(s) for p in phrases), timeout, what)

    def wait_cursor(self, where: Callable[[str, str], bool], timeout: float, what: str) -> None:
        """Until the cursor is where `where(before, after)` says (its screen line split at the cursor)."""
        self.wait(lambda _s: where(*self.at_cursor()), timeout, f"the cursor {what}")

    def move_cursor(self, keys: tuple[str, ...], where: Callable[[str, str], bool], what: str,
                    timeout: float = 20) -> None:
        """Send cursor keys until the cursor is where `where(before, after)` says (the cursor's line split at the
        cursor). The keys must be idempotent (e.g. Up×20 Home): they are sent again while focus is still moving to
        the widget they are meant for, as keys typed during a focus change go to the widget it leaves."""
        deadline = time.monotonic() + timeout
        while True:
            self.keys(*keys)
            try:
                self.wait_cursor(where, min(2.0, max(0.1, deadline - time.monotonic())), what)
                return
            except AssertionError:
                if time.monotonic() >= deadline:
                    before, after = self.at_cursor()
                    raise AssertionError(f"the cursor is not {what}: {before!r} | {after!r}\n{self.screen()}") from None

    def kill(self) -> None:
        self.tmux("kill-server")
