"""console/kube/cache.py's pure pieces: backoff, watch timeouts, line splitting, failure wording, and the
list/watch loop on a scripted server (the 410 stream that killed the old cache thread).

Backoff after client-go's ExponentialBackoffManager / wait.Backoff (k8s.io/apimachinery/pkg/util/wait:
duration grows by Factor up to Cap, plus rand×Jitter×duration; reset after the reset duration without a
backoff); timeoutSeconds as k8s.io/client-go/tools/cache/reflector.go: minWatchTimeout × (rand + 1).
"""

from __future__ import annotations

import json
import queue
import threading
from typing import Any

from urllib3.exceptions import MaxRetryError, NewConnectionError

from console.kube.cache import MIN_WATCH_TIMEOUT, Backoff, ResourceCache, lines, reason_of, watch_timeout
from console.kube.codec import JsonCodec


def test_backoff_doubles_up_to_the_cap_with_jitter_and_resets_after_a_quiet_spell() -> None:
    now = [0.0]
    b = Backoff(initial=0.8, cap=2.0, factor=2.0, jitter=0.5, reset_after=120.0, clock=lambda: now[0],
                rand=lambda: 0.0)
    assert [b.next() for _ in range(4)] == [0.8, 1.6, 2.0, 2.0]
    now[0] = 500.0  # no backoff for longer than reset_after: start again
    assert b.next() == 0.8
    top = Backoff(initial=0.8, cap=2.0, jitter=0.5, rand=lambda: 0.999)
    assert max(top.next() for _ in range(10)) < 3.0  # cap plus at most jitter × cap
    assert Backoff(rand=lambda: 0.0).next(cap=30.0) == 0.8
    slow = Backoff(rand=lambda: 0.0)
    assert [slow.next(cap=30.0) for _ in range(8)][-1] == 30.0  # 401/403: the reflector's 30 s cap


def test_watch_timeout_is_min_watch_timeout_times_one_to_two() -> None:
    assert watch_timeout(lambda: 0.0) == int(MIN_WATCH_TIMEOUT) == 300
    assert watch_timeout(lambda: 0.999) == 599


class _Resp:
    """What urllib3 hands back with preload_content=False: chunks from stream(), data, release_conn()."""

    def __init__(self, chunks: list[bytes] | None = None, data: bytes = b"", wait: threading.Event | None = None):
        self._chunks, self.data, self._wait = chunks or [], data, wait

    def stream(self, amt: Any = None, decode_content: bool = True) -> Any:
        yield from self._chunks
        if self._wait is not None:
            self._wait.wait(10)

    def release_conn(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_lines_split_across_chunks_and_skip_blank_lines() -> None:
    resp = _Resp([b'{"a":', b'1}\n\n{"b"', b':2}\n{"c":3}'])
    assert list(lines(resp)) == [b'{"a":1}', b'{"b":2}', b'{"c":3}']


def test_failures_are_worded_in_one_line() -> None:
    refused = MaxRetryError(None, "/api/v1/nodes", NewConnectionError(None, "Failed to establish a new connection: "
                                                                            "[Errno 111] Connection refused"))
    assert reason_of(refused) == "connection refused"
    from kubernetes.client.exceptions import ApiException

    err = ApiException(status=403, reason="Forbidden")
    err.body = json.dumps({"kind": "Status", "code": 403, "message": 'nodes is forbidden: User "v" cannot list '
                           'resource "nodes" in API group "" at the cluster scope'})
    assert reason_of(err).startswith('forbidden: nodes is forbidden: User "v" cannot list')
    assert reason_of(ApiException(status=503, reason="Service Unavailable")) == "HTTP 503"


def _node(name: str, rv: str) -> dict:
    return {"metadata": {"name": name, "resourceVersion": rv}}


def _list(rv: str, *names: str, cont: str = "") -> _Resp:
    return _Resp(data=json.dumps({"metadata": {"resourceVersion": rv, "continue": cont},
                                  "items": [_node(n, rv) for n in names]}).encode())


def _watch(*events: tuple[str, dict], hold: threading.Event | None = None) -> _Resp:
    return _Resp([b"".join(json.dumps({"type": t, "object": o}).encode() + b"\n" for t, o in events)], wait=hold)


class _Server:
    """A scripted API server: each list/watch call takes the next response of its kind."""

    def __init__(self, lists: list[Any], watches: list[Any]) -> None:
        self.lists, self.watches = queue.Queue(), queue.Queue()
        for r in lists:
            self.lists.put(r)
        for r in watches:
            self.watches.put(r)
        self.calls: list[dict] = []

    def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        got = (self.watches if kwargs.get("watch") else self.lists).get(timeout=10)
        if isinstance(got, BaseException):
            raise got
        return got


def test_an_error_410_event_relists_replaces_the_map_and_watches_on() -> None:
    """The issue's reproduction: one list, one watch ending in ERROR 410. The old cache's thread died there
    (KeyError 'raw_object'); now it relists (b deleted in the gap is gone, c added) and watches from the
    new resourceVersion with bookmarks, timeoutSeconds and a client-side timeout."""
    stop, hold = threading.Event(), threading.Event()
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version: 5 (9)"}
    server = _Server(
        lists=[_list("5", "a", "b"), _list("12", "a", "c")],
        watches=[_watch(("MODIFIED", _node("a", "6")), ("ERROR", gone)),
                 _watch(("BOOKMARK", {"metadata": {"resourceVersion": "13"}}), hold=hold)])
    changes: list[int] = []
    cache = ResourceCache(server, JsonCodec(lambda o: o["metadata"]["resourceVersion"]),
                          on_change=lambda: changes.append(1), name="nodes", backoff=Backoff(initial=0.01, cap=0.01))
    t = threading.Thread(target=cache.run, args=(stop,), daemon=True)
    t.start()
    try:
        for _ in range(200):
            if cache.resource_version == "13":
                break
            stop.wait(0.05)
        assert cache.snapshot() == {("", "a"): "12", ("", "c"): "12"}
        assert (cache.relists, cache.watches, cache.list_calls) == (1, 2, 2)
        assert cache.health().state == "live" and t.is_alive()
        watch = [c for c in server.calls if c.get("watch")]
        assert [c["resource_version"] for c in watch] == ["5", "12"]
        for c in watch:
            assert c["allow_watch_bookmarks"] is True and 300 <= c["timeout_seconds"] < 600
            assert c["_preload_content"] is False and c["_request_timeout"] == (5.0, 30.0)
    finally:
        stop.set()
        hold.set()
        t.join(5)


def test_first_list_publishes_each_page_and_a_403_empties_the_cache() -> None:
    from kubernetes.client.exceptions import ApiException

    stop, hold = threading.Event(), threading.Event()
    forbidden = ApiException(status=403, reason="Forbidden")
    server = _Server(lists=[_list("5", "a", cont="t1"), _list("5", "b")] + [forbidden] * 10,
                     watches=[ApiException(status=410, reason="Gone")])
    seen: list[tuple[bool, int]] = []
    cache: ResourceCache[str] = ResourceCache(
        server, JsonCodec(lambda o: o["metadata"]["name"]),
        on_change=lambda: seen.append((cache.loading, len(cache.snapshot()))))
    t = threading.Thread(target=cache.run, args=(stop,), daemon=True)
    t.start()
    try:
        for _ in range(200):
            if cache.health().state == "forbidden":
                break
            stop.wait(0.05)
        assert seen[:2] == [(True, 1), (False, 2)]  # the first page painted while the list went on
        assert cache.health().state == "forbidden" and cache.health().reason == "forbidden"
        assert cache.snapshot() == {} and cache.relists >= 1  # the 410 watch relisted, refused: nothing shown
        assert server.calls[1]["_continue"] == "t1" and server.calls[0]["limit"] == 500
    finally:
        stop.set()
        hold.set()
        t.join(5)


def test_a_401_is_unauthorized() -> None:
    from kubernetes.client.exceptions import ApiException

    stop = threading.Event()
    server = _Server(lists=[ApiException(status=401, reason="Unauthorized")] * 10, watches=[])
    cache: ResourceCache[str] = ResourceCache(server, JsonCodec(lambda o: o["metadata"]["name"]), name="pods")
    t = threading.Thread(target=cache.run, args=(stop,), daemon=True)
    t.start()
    try:
        for _ in range(200):
            if cache.health().state != "loading":
                break
            stop.wait(0.05)
        state = cache.health()
        assert (state.name, state.state, state.reason) == ("pods", "unauthorized", "unauthorized")
        assert state.since is not None and cache.loading
    finally:
        stop.set()
        t.join(5)


def test_an_expired_continue_token_relists_unpaged() -> None:
    """client-go tools/pager: a 410 on a continue token falls back to one full list (FullListIfExpired)."""
    from kubernetes.client.exceptions import ApiException

    stop, hold = threading.Event(), threading.Event()
    server = _Server(lists=[_list("5", "a", cont="t1"), ApiException(status=410, reason="Expired"),
                            _list("9", "a", "b")], watches=[_watch(hold=hold)])
    cache: ResourceCache[str] = ResourceCache(server, JsonCodec(lambda o: o["metadata"]["name"]))
    t = threading.Thread(target=cache.run, args=(stop,), daemon=True)
    t.start()
    try:
        assert cache.synced.wait(5)
        assert cache.snapshot() == {("", "a"): "a", ("", "b"): "b"} and cache.resource_version == "9"
        assert [(c.get("limit"), c.get("_continue")) for c in server.calls[:3]] == [(500, None), (500, "t1"),
                                                                                   (None, None)]
    finally:
        stop.set()
        hold.set()
        t.join(5)


class _Dropped(_Resp):
    """A watch whose connection goes quiet (read timeout) or breaks mid-stream."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self._error = error

    def stream(self, amt: Any = None, decode_content: bool = True) -> Any:
        raise self._error
        yield b""  # a generator, as urllib3's


def test_a_quiet_or_dropped_watch_is_restarted_and_a_failed_reconnect_reported() -> None:
    """A read timeout (the client-side `_request_timeout`) or a connection broken mid-stream restarts the watch
    from its resourceVersion without a relist or a health change; a reconnect that then fails is reported as
    reconnecting with why, and the next working watch makes the cache live again."""
    from urllib3.exceptions import ProtocolError, ReadTimeoutError

    stop, hold = threading.Event(), threading.Event()
    refused = MaxRetryError(None, "/api/v1/nodes", NewConnectionError(None, "[Errno 111] Connection refused"))
    reports: list[tuple[str, str]] = []
    server = _Server(lists=[_list("5", "a")],
                     watches=[_Dropped(ReadTimeoutError(None, "/api/v1/nodes", "Read timed out.")),
                              _Dropped(ProtocolError("Response ended prematurely")), refused,
                              _watch(hold=hold)])
    def health() -> None:
        reports.append((cache.health().state, cache.health().reason))

    cache: ResourceCache[str] = ResourceCache(server, JsonCodec(lambda o: o["metadata"]["name"]), name="nodes",
                                              backoff=Backoff(initial=0.01, cap=0.01), on_health=health)
    t = threading.Thread(target=cache.run, args=(stop,), daemon=True)
    t.start()
    try:
        for _ in range(200):
            if cache.watches == 4:
                break
            stop.wait(0.05)
        assert (cache.watches, cache.relists) == (4, 0)
        assert reports == [("live", ""), ("reconnecting", "connection refused"), ("live", "")]
        assert [c["resource_version"] for c in server.calls if c.get("watch")] == ["5"] * 4
    finally:
        stop.set()
        hold.set()
        t.join(5)


def test_after_a_403_the_cache_lists_again_rather_than_resuming_the_watch() -> None:
    """The 403 emptied the cache, so when access returns it must list (not apply a watch's deltas to nothing)."""
    from kubernetes.client.exceptions import ApiException

    stop, hold = threading.Event(), threading.Event()
    server = _Server(lists=[_list("5", "a", "b"), _list("8", "a", "b")],
                     watches=[ApiException(status=403, reason="Forbidden"), _watch(hold=hold)])
    cache: ResourceCache[str] = ResourceCache(server, JsonCodec(lambda o: o["metadata"]["name"]),
                                              backoff=Backoff(initial=0.01, cap=0.01))
    t = threading.Thread(target=cache.run, args=(stop,), daemon=True)
    t.start()
    try:
        for _ in range(200):
            if cache.watches == 2:
                break
            stop.wait(0.05)
        assert cache.snapshot() == {("", "a"): "a", ("", "b"): "b"} and cache.relists == 1
        assert cache.health().state == "live"
    finally:
        stop.set()
        hold.set()
        t.join(5)
