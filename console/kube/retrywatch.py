"""Waits that outlive an API blip: read, then watch from that resourceVersion until a condition holds or the
wait's own deadline passes, reconnecting in between (the runbooks' waits, `nfd files push` waiting for labels).

As client-go does it:
- tools/watch/retrywatcher.go (RetryWatcher, under watchtools.Until): a watch that ends or fails is started
  again from the last resourceVersion seen; every failure but 410 Gone is retried ("RetryWatcher is meant to
  proceed unless it is certain that it can't … leave it up to the user to timeout"), never sooner than a
  second after the last start (minRestartDelay);
- tools/cache/reflector.go: 410 Gone (history compacted away, an expired watch) → read again and watch from
  there; failures back off with jitter (wait.Backoff; console/kube/cache.Backoff, capped at 2 s while the server
  is unreachable so a wait sees it back within seconds).
What is waited out: the server unreachable or the connection cut (urllib3's errors, also inside MaxRetryError;
console/faults.py's chain and loaded) and answers that say "later" (429, 5xx). What is not: 401, 403, 404 on the
read, a bad request — those are answers, raised at once for the caller to report. A read idle for 30 s (a
connection that died silently: client-go has HTTP/2 pings for it) ends the watch, which starts again at once.

Only the deadline ends a wait the server is away for: `Waited.outage` then says since when it has not answered
and why, for the caller's TimeoutError. The first failure of an outage and the recovery are logged (warning:
the console's log file), not every retry.
"""

from __future__ import annotations

import contextlib
import json
import logging
import ssl
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from console import faults
from console.kube.cache import REQUEST_TIMEOUT, Backoff, lines, reason_of

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})  # the server says "later" (apierrors.IsTooManyRequests, 5xx)
CONNECT_S, READ_IDLE_S = REQUEST_TIMEOUT  # as the caches' requests
MIN_RESTART_S = 1.0  # retrywatcher.go minRestartDelay

# Read: () -> (done, resourceVersion to watch from); Event: (type, object) -> done
Read = Callable[[], tuple[bool, str | None]]
OnEvent = Callable[[str, dict[str, Any]], bool]


class _Gone(Exception):
    """410: the resourceVersion is too old to watch from; read again."""


class _Later(Exception):
    """An ERROR event other than 410 (the server's Status): retried, after its retryAfterSeconds if it gives one."""

    def __init__(self, status: dict[str, Any]) -> None:
        super().__init__(f"HTTP {status.get('code', '?')} {status.get('reason', '')}: {status.get('message', '')}")
        self.retry_after = float(((status.get("details") or {}).get("retryAfterSeconds")) or 0)


def transient(e: BaseException) -> bool:
    """Whether a failed call is worth making again before the deadline: the server unreachable or the connection
    cut (urllib3 and socket errors, through MaxRetryError's reason), or an HTTP answer that says try later."""
    if isinstance(e, _Later):
        return True
    if isinstance(e, faults.loaded(faults.KUBE_API_ERROR)):
        return getattr(e, "status", None) in RETRY_STATUS
    # a TLS session cut mid-handshake (a server going down) is a cut connection; a certificate error is not
    cut = (*faults.loaded(*faults.URLLIB3_UNREACHABLE), ConnectionError, TimeoutError, ssl.SSLEOFError)
    return any(isinstance(c, cut) for c in faults.chain(e))


@dataclass(frozen=True)
class Waited:
    """How a wait ended: `done`, else (the deadline) `down_since` (time.time(): the API server has not answered
    since then) and `reason` when it ended in an outage."""

    done: bool
    down_since: float | None = None
    reason: str = ""

    @property
    def outage(self) -> str:
        """"" or "; the API server has not answered since 14:02:11 (connection refused)", to end a message."""
        if self.down_since is None:
            return ""
        since = datetime.fromtimestamp(self.down_since).strftime("%H:%M:%S")
        return f"; the API server has not answered since {since} ({self.reason})"


class WaitTimedOut(TimeoutError):
    """A wait's deadline passed: `last` the object as last seen (None: absent), `seen` whether it was ever read,
    `outage` the Waited.outage text ("" when the server answered)."""

    def __init__(self, message: str, last: dict[str, Any] | None, seen: bool, outage: str) -> None:
        super().__init__(message)
        self.last, self.seen, self.outage = last, seen, outage


def poll_again(e: BaseException, deadline: float, what: str, down: bool) -> bool:
    """For a wait that polls (reads again every second) and whose read failed with `e`: whether to read again —
    the API server is away for a moment (`transient`) and the deadline is ahead. The first failure of an outage
    (`down` False) is logged; the caller raises `e` when this says no."""
    if not transient(e) or time.monotonic() >= deadline:
        return False
    if not down:
        log.warning("%s: the API server did not answer (%s); polling again until the wait's deadline", what,
                    reason_of(e))
    return True


def until(list_fn: Callable[..., Any], *args: Any, read: Read, on_event: OnEvent, deadline: float, what: str,
          field_selector: str = "", slice_s: float | None = None, between: Callable[[], None] = lambda: None,
          sleep: Callable[[float], None] = time.sleep) -> Waited:
    """`read()`, then watch `list_fn(*args)` (a kubernetes client list method) from the resourceVersion it gave,
    calling `on_event` per change, until one of them says done or time.monotonic() passes `deadline`.
    `slice_s`: at most this long per watch request, with `between()` after each (a caller that must be able to
    stop raises from it); `what` names the wait in the log ("node kube-worker01")."""
    backoff = Backoff()
    rv: str | None = None
    need_read = True
    down_since: float | None = None  # time.time() of the first failure of the current outage
    reason = ""

    def answered() -> None:
        nonlocal down_since, reason
        if down_since is not None:
            log.warning("%s: the API server answers again after %.1fs; the wait goes on", what,
                        time.time() - down_since)
            down_since, reason = None, ""

    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return Waited(False, down_since, reason)
        started = time.monotonic()
        try:
            if need_read:
                done, rv = read()
                answered()
                need_read = False
                if done:
                    return Waited(True)
                continue
            budget = remaining if slice_s is None else min(slice_s, remaining)
            resp = _watch(list_fn, args, rv, budget, field_selector)
            answered()
            log.debug("%s: watching from resourceVersion %s", what, rv or "(now)")
            with contextlib.closing(_events(resp)) as events:
                for kind, obj in events:
                    rv = ((obj.get("metadata") or {}).get("resourceVersion")) or rv
                    if kind != "BOOKMARK" and on_event(kind, obj):
                        return Waited(True)
                    if time.monotonic() > deadline:
                        break
            between()
            backoff.reset()
            # watches start at most once a second (retrywatcher.go: wait.NonSlidingUntil, minRestartDelay)
            pause = min(MIN_RESTART_S - (time.monotonic() - started), deadline - time.monotonic())
            if pause > 0:
                sleep(pause)
        except _Gone as e:
            log.info("%s: %s; reading it again", what, e)
            need_read = True
            if time.monotonic() - started < MIN_RESTART_S:  # 410 straight after a read: the server churns
                sleep(min(backoff.next(), max(0.0, deadline - time.monotonic())))
        except Exception as e:  # an answer (401, 403, 404 …) or a bug: the caller's
            if not transient(e):
                raise
            if down_since is None:
                down_since, reason = time.time(), reason_of(e)
                log.warning("%s: the API server did not answer (%s); watching again from resourceVersion %s "
                            "until the wait's deadline", what, reason, rv or "(a fresh read)")
            delay = max(backoff.next(), getattr(e, "retry_after", 0.0))
            between()
            sleep(min(delay, max(0.0, deadline - time.monotonic())))


def _watch(list_fn: Callable[..., Any], args: tuple[Any, ...], rv: str | None, budget: float,
           field_selector: str) -> Any:
    """Open one watch request from `rv` that the server ends after about `budget` seconds (its response, read
    by `_events`); a 410 answer is _Gone."""
    kw: dict[str, Any] = {"field_selector": field_selector} if field_selector else {}
    if rv:
        kw["resource_version"] = rv
    try:
        return list_fn(*args, watch=True, allow_watch_bookmarks=True, timeout_seconds=max(1, int(budget) + 1),
                       _preload_content=False, _request_timeout=(CONNECT_S, min(READ_IDLE_S, budget + 5)), **kw)
    except faults.loaded(faults.KUBE_API_ERROR) as e:
        if getattr(e, "status", None) == 410:
            raise _Gone(f"410 Gone ({faults.status_message(e) or 'too old a resourceVersion'})") from e
        raise


def _events(resp: Any) -> Generator[tuple[str, dict[str, Any]], None, None]:
    """(type, object) per event of a watch response, read as console/kube/cache.py reads it (kubernetes.watch.Watch
    deserialises every object into models, and turns an ERROR event into an exception without its details). A
    stream cut, a line cut short or a read idle for READ_IDLE_S ends it quietly: the next request says whether the
    server is there."""
    from urllib3.exceptions import ProtocolError, ReadTimeoutError

    try:
        for line in lines(resp):
            try:
                ev = json.loads(line)
            except ValueError:  # a line cut short: as a cut stream, watch again from the last resourceVersion
                return
            kind, obj = str(ev.get("type") or ""), ev.get("object") or {}
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise _Gone(f"410 Gone ({obj.get('message', '')})")
                raise _Later(obj)
            yield kind, obj
    except (ReadTimeoutError, ProtocolError):
        return
    finally:
        resp.release_conn()
        resp.close()
