"""The console's three clients reach one consistent lab: node ⇄ Nova server ⇄ libvirt domain."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.lab


def test_python_clients_see_the_same_vm(seed_resize_lab, monkeypatch):
    import libvirt
    import openstack
    from kubernetes import client, config

    lab = seed_resize_lab
    api = client.CoreV1Api(config.new_client_from_config(config_file=str(lab.state.kubeconfig)))
    node = api.read_node("kube-worker02")
    uuid = node.status.node_info.system_uuid
    assert node.spec.provider_id == f"openstack:///{uuid}"

    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(lab.state.clouds_yaml))
    conn = openstack.connect(cloud="lab")
    server = conn.compute.find_server("kube-worker02", ignore_missing=False)
    assert server.id == uuid and server.instance_name == "instance-0000335c"
    assert {f.name: (f.vcpus, f.ram) for f in conn.compute.flavors()}["m1.large"] == (8, 12288)

    virt = libvirt.open(lab.libvirt_uri)
    try:
        dom = virt.lookupByUUIDString(uuid)
        assert dom.name() == server.instance_name
        assert dom.vcpusFlags(libvirt.VIR_DOMAIN_AFFECT_LIVE) == 2
        assert dom.info()[1] == 4096 * 1024  # <memory> KiB, as Nova writes the flavor's RAM
    finally:
        virt.close()


def test_secrets_stay_in_their_files(seed_resize_lab):
    lab = seed_resize_lab
    for path in (lab.state.kubeconfig, lab.state.clouds_yaml, lab.state.env):
        assert (os.stat(path).st_mode & 0o777) == 0o600
    env_text = lab.state.env.read_text()
    assert "password" not in env_text.lower() and "token" not in env_text.lower()
