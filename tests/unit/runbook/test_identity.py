"""console/runbook/identity.py: the message of a journal whose cloud is not this session's must show the
difference. Keystone project names are unique per domain only (keystone api-ref, "Projects": the name is
unique within the owning domain), so two projects can both be called `admin`; the token's project id
(openstacksdk `current_project_id`) is what the journal compares, and the message has to name it."""

from __future__ import annotations

from console.runbook.identity import infra_problem

AUTH = "http://keystone.example:5000/v3"


def _infra(project: str, project_id: str) -> dict:
    return {"method": "openstack", "openstack": {"auth_url": AUTH, "project": project, "project_id": project_id},
            "libvirt": [], "vm": "vm-1"}


def test_same_project_name_other_project_id_names_both_ids() -> None:
    why = infra_problem(_infra("admin", "0d3c1f6a"), _infra("admin", "ffffffff"))
    assert why is not None
    recorded, _, current = why.partition("; this session uses ")
    assert "0d3c1f6a" in recorded and "ffffffff" in current, why


def test_the_same_cloud_is_no_problem_and_another_auth_url_is_named() -> None:
    assert infra_problem(_infra("admin", "0d3c1f6a"), _infra("admin", "0d3c1f6a")) is None
    other = _infra("admin", "0d3c1f6a")
    other["openstack"]["auth_url"] = "https://keystone.other/v3"
    why = infra_problem(other, _infra("admin", "0d3c1f6a"))
    assert why is not None and why.startswith("was run on OpenStack https://keystone.other/v3 project admin")
