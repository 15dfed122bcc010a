"""The JSON patch that cordons or uncordons a node and sets or removes the console's mark in the same request
(console/kube/nodes_ops.py annotation_patch; RFC 6902 operations, RFC 6901 pointers: "~" → "~0", "/" → "~1")."""

from __future__ import annotations

from console.kube.nodes_ops import annotation_patch
from console.runbook.cordon import MARK, marked_by, someone_elses


def test_marks_are_added_replaced_and_removed_with_escaped_pointers():
    assert annotation_patch({"metadata": {}}, {MARK: "run-1"}) == [
        {"op": "add", "path": "/metadata/annotations", "value": {MARK: "run-1"}}]  # no map yet: the whole map
    assert annotation_patch({"metadata": {}}, {MARK: None}) == []
    node = {"metadata": {"annotations": {MARK: "run-1", "a~b/c": "x"}}}
    assert annotation_patch(node, {MARK: "run-1"}) == []  # already so: nothing to send
    assert annotation_patch(node, {MARK: "run-2"}) == [
        {"op": "add", "path": "/metadata/annotations/console~1cordoned-by", "value": "run-2"}]
    assert annotation_patch(node, {MARK: None, "a~b/c": None}) == [
        {"op": "remove", "path": "/metadata/annotations/console~1cordoned-by"},
        {"op": "remove", "path": "/metadata/annotations/a~0b~1c"}]


def test_a_cordon_is_the_consoles_only_with_its_mark():
    admins = {"spec": {"unschedulable": True}, "metadata": {"annotations": {"other": "x"}}}
    ours = {"spec": {"unschedulable": True}, "metadata": {"annotations": {MARK: "run-1"}}}
    stale = {"spec": {}, "metadata": {"annotations": {MARK: "run-1"}}}  # `kubectl uncordon` keeps annotations
    assert (marked_by(admins), someone_elses(admins)) == (None, True)
    assert (marked_by(ours), someone_elses(ours)) == ("run-1", False)
    assert (marked_by(stale), someone_elses(stale)) == (None, False)
