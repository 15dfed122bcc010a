import pytest

from console.lab.store import AlreadyExists, Conflict, Gone, Invalid, NotFound, Store


@pytest.fixture
def store() -> Store:
    s = Store()
    s.create("namespaces", {"metadata": {"name": "default"}})
    return s


def pod(name: str, node: str | None = None) -> dict:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"nodeName": node} if node else {}}


def test_create_sets_metadata_and_kind(store: Store) -> None:
    obj = store.create("pods", pod("a"))
    assert obj["kind"] == "Pod" and obj["apiVersion"] == "v1"
    assert obj["metadata"]["uid"] and obj["metadata"]["creationTimestamp"]
    assert int(obj["metadata"]["resourceVersion"]) == store.resource_version
    with pytest.raises(AlreadyExists, match='pods "a" already exists'):
        store.create("pods", pod("a"))


def test_generate_name_and_missing_namespace(store: Store) -> None:
    obj = store.create("pods", {"metadata": {"generateName": "node-debugger-", "namespace": "default"}})
    assert obj["metadata"]["name"].startswith("node-debugger-")
    with pytest.raises(Invalid):
        store.create("pods", {"metadata": {"namespace": "default"}})
    with pytest.raises(NotFound, match='namespaces "nope" not found'):
        store.create("pods", {"metadata": {"name": "x", "namespace": "nope"}})


def test_stale_update_conflicts(store: Store) -> None:
    first = store.create("configmaps", {"metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1"}})
    stale = {**first, "data": {"a": "2"}}
    store.update("configmaps", {**first, "data": {"a": "3"}})
    with pytest.raises(Conflict, match="the object has been modified"):
        store.update("configmaps", stale)
    assert store.get("configmaps", "default", "c")["data"] == {"a": "3"}


def test_noop_update_keeps_resource_version(store: Store) -> None:
    obj = store.create("configmaps", {"metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1"}})
    again = store.update("configmaps", obj)
    assert again["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]


def test_mutate_edits_a_copy(store: Store) -> None:
    store.create("nodes", {"metadata": {"name": "n1"}, "spec": {}})
    before = store.get("nodes", None, "n1")
    after = store.mutate("nodes", None, "n1", lambda o: o["spec"].update(unschedulable=True))
    assert after["spec"]["unschedulable"] is True
    assert before["spec"] == {}  # handed-out objects are never edited in place
    assert after["metadata"]["generation"] == 2
    with pytest.raises(Conflict):
        store.mutate("nodes", None, "n1", lambda o: None, expect_rv=before["metadata"]["resourceVersion"])


def test_pods_on_node_index_follows_binding_and_delete(store: Store) -> None:
    store.create("pods", pod("a"))
    assert store.pods_on_node("w1") == []
    store.mutate("pods", "default", "a", lambda o: o["spec"].update(nodeName="w1"))
    assert [p["metadata"]["name"] for p in store.pods_on_node("w1")] == ["a"]
    store.delete("pods", "default", "a")
    assert store.pods_on_node("w1") == []


def test_subscribe_replays_since_rv_and_filters(store: Store) -> None:
    store.create("pods", pod("a"))
    rv = store.resource_version
    store.create("pods", pod("b"))
    store.create("configmaps", {"metadata": {"name": "c", "namespace": "default"}})
    seen: list[tuple[str, str]] = []
    unsub = store.subscribe("pods", lambda ev: seen.append((ev.type, ev.object["metadata"]["name"])), since_rv=rv)
    store.delete("pods", "default", "a")
    unsub()
    store.create("pods", pod("c"))
    assert seen == [("ADDED", "b"), ("DELETED", "a")]


def test_subscribe_from_compacted_history_is_gone(store: Store) -> None:
    import console.lab.store as mod

    small = Store()
    small._history = mod.deque(maxlen=3)
    small.create("namespaces", {"metadata": {"name": "default"}})
    for i in range(5):
        small.create("pods", pod(f"p{i}"))
    with pytest.raises(Gone, match="too old resource version"):
        small.subscribe("pods", lambda ev: None, since_rv=1)


def test_list_sorted_with_predicate(store: Store) -> None:
    for name in ("b", "a", "c"):
        store.create("pods", pod(name, node="w1" if name != "c" else None))
    items, rv = store.list("pods", predicate=lambda o: o["spec"].get("nodeName") == "w1")
    assert [o["metadata"]["name"] for o in items] == ["a", "b"]
    assert rv == store.resource_version


def test_bulk_load_indexes_without_events(store: Store) -> None:
    seen: list[str] = []
    store.subscribe("pods", lambda ev: seen.append(ev.type))
    n = store.bulk_load("pods", [pod(f"p{i}", node="w1") for i in range(3)])
    assert n == 3 and seen == []
    assert len(store.pods_on_node("w1")) == 3
    assert store.get("pods", "default", "p2")["metadata"]["resourceVersion"] == str(store.resource_version)
    with pytest.raises(AlreadyExists):
        store.bulk_load("pods", [pod("p0")])
