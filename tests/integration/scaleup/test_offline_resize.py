"""Field report 2, offline part, through `console scale-up --flavor`, plus plan-time and Nova faults."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.lab

NODE = "kube-worker02"


def test_flavor_too_small_is_refused_at_plan_time(resize_lab, tmp_path, scale_up, h):
    # its own flavor is not refused any more but nothing to do (issue 8; test_nothing_to_do.py)
    code, doc, _err = scale_up(resize_lab, tmp_path, NODE, "--flavor", "m1.medium", "--yes")
    assert code == 0 and doc["status"] == "nothing-to-do"
    code, doc, _err = scale_up(resize_lab, tmp_path, "kube-worker01", "--flavor", "m1.small", "--yes")
    assert code == 2 and "smaller than the VM" in doc["message"]
    assert not h.node_obj(resize_lab, "kube-worker01")["spec"].get("unschedulable")


@pytest.mark.parametrize("args", [("--flavor", "m1.large"), ("--flavor", "m1.large", "--dry-run"), ("--revert",)])
def test_a_node_that_does_not_exist_is_not_found(resize_lab, tmp_path, scale_up, args):
    """Issue 20, point 10: `scale-up nosuch` exited 2 where the README's exit codes say 3 (not found), as
    `get node NAME` does — with `-o json` that command's error object."""
    code, doc, err = scale_up(resize_lab, tmp_path, "nosuch", *args, "--yes")
    assert code == 3, err
    assert doc == {"status": "error", "error": "not-found", "message": "node nosuch not found", "exit_code": 3}
    assert err.strip() == "scale-up: node nosuch not found"


def test_refuses_without_yes_when_not_a_tty(resize_lab, tmp_path, scale_up):
    code, _doc, err = scale_up(resize_lab, tmp_path, NODE, "--flavor", "m1.large")
    assert code == 5 and "--yes" in err


def test_dry_run_prints_the_plan(resize_lab, tmp_path, scale_up):
    code, doc, _ = scale_up(resize_lab, tmp_path, NODE, "--flavor", "m1.large", "--dry-run")
    assert code == 0 and doc["dry_run"]
    plan = doc["plan"]
    assert plan["will_fit"] == ["default/nginx"]
    assert [s["id"] for s in plan["steps"]][:4] == ["preflight", "cordon", "drain", "resize"]
    assert not (tmp_path / "console" / "runbooks").exists() or not list((tmp_path / "console" / "runbooks").iterdir())


def test_no_valid_host_reports_nova_error_and_uncordons(resize_lab, tmp_path, scale_up, h):
    sid = next(vm.server_id for vm in resize_lab.vms if vm.node_name == NODE)
    resize_lab.nova.inject_fault(sid, "no-valid-host")
    code, doc, err = scale_up(resize_lab, tmp_path, NODE, "--flavor", "m1.large", "--yes")
    assert code == 1, err
    assert "No valid host was found" in doc["message"]
    assert resize_lab.nova.server(sid).flavor.name == "m1.medium"
    assert not h.node_obj(resize_lab)["spec"].get("unschedulable")


def test_field_report_offline_resize(resize_lab, tmp_path, scale_up, h):
    code, _doc, err = scale_up(resize_lab, tmp_path, NODE, "--flavor", "m1.large", "--yes")
    assert code == 0, err
    cap = h.node_obj(resize_lab)["status"]["capacity"]
    assert (cap["cpu"], cap["memory"]) == ("8", "12268324Ki")
    pod = h.pod_obj(resize_lab, "nginx")
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == NODE
    sid = next(vm.server_id for vm in resize_lab.vms if vm.node_name == NODE)
    resizes = [a for a in resize_lab.nova.actions(sid) if a.action == "resize"]
    assert len(resizes) == 2  # the NoValidHost attempt and this one
    audit = (tmp_path / "console" / "audit.log").read_text()
    assert "runbook.scale-up.resize" in audit and "runbook.scale-up.confirm-resize" in audit
