"""Placement's and Nova's process: Placement's WSGI app, nova-conductor, nova-scheduler, one nova-compute per lab
compute host and nova-api, all on oslo.messaging's in-process `fake://` transport (it has no broker, so every Nova
service is in this one process), as Nova's own functional tests run them.

    python -m console.lab.cloud.nova_main ROOT NOVA_PORT PLACEMENT_PORT IMAGE_PORT

ROOT is the cloud's state directory (nova.conf, placement/placement.conf, the databases, hosts.json). Glance and
Neutron are Nova's in-tree fixtures (nova/tests/fixtures): the lab's guests are diskless and have no NIC, and
servers boot with `networks: none`. IMAGE_PORT serves a read-only Glance v2 over the fixture's images for the
`openstack` CLI, which looks images up in the catalog.

Set-up follows nova/cmd/compute.py and nova/api/openstack/wsgi_app.py; three things make it work in one process
(found by the real-OpenStack probe, shared/reference/real-openstack.md): Nova in native threading mode before
anything imports eventlet's patches, computes created with `topic_alt` (Nova 34 sends resize_instance there), and
SQLite writes serialised per database (Nova's DatabaseWriteLock, what its threading-mode tests use)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

os.environ["OS_NOVA_DISABLE_EVENTLET_PATCHING"] = "1"
from nova import monkey_patch

monkey_patch.patch(backend="threading")


class _Fixtures:
    """The three methods of nova.test.TestCase that Nova's Glance and Neutron fixtures call."""

    def useFixture(self, fixture: Any) -> Any:
        fixture.setUp()
        return fixture

    def stub_out(self, old: str, new: Any) -> None:
        import fixtures

        self.useFixture(fixtures.MonkeyPatch(old, new))

    def flags(self, **kw: Any) -> None:
        import nova.conf

        group = kw.pop("group", None)
        for k, v in kw.items():
            nova.conf.CONF.set_override(k, v, group)


def _image_app(glance: Any, port: int) -> Any:
    """Glance v2's image listing and show, read-only, over the fixture's images."""

    def shown(i: dict[str, Any]) -> dict[str, Any]:
        d = {
            k: i.get(k)
            for k in (
                "id",
                "name",
                "status",
                "visibility",
                "container_format",
                "disk_format",
                "size",
                "min_ram",
                "min_disk",
                "protected",
            )
        }
        d.update(i.get("properties") or {})
        d.update(
            tags=list(i.get("tags") or []),
            created_at="2026-01-01T00:00:00Z",
            updated_at="2026-01-01T00:00:00Z",
            schema="/v2/schemas/image",
        )
        d["self"] = d["file"] = f"/v2/images/{i['id']}"
        return d

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        path = environ.get("PATH_INFO", "/").rstrip("/")
        query = parse_qs(environ.get("QUERY_STRING", ""))
        images = [shown(i) for i in glance.images.values()]
        status: str = "200 OK"
        body: Any = None
        if path in ("", "/versions"):
            status = "300 Multiple Choices" if path == "" else status
            body = {
                "versions": [
                    {
                        "id": "v2.16",
                        "status": "CURRENT",
                        "links": [{"rel": "self", "href": f"http://127.0.0.1:{port}/v2/"}],
                    }
                ]
            }
        elif path == "/v2/images":
            for k in ("name", "id", "status", "visibility"):
                if k in query:
                    images = [i for i in images if i.get(k) == query[k][0]]
            body = {"images": images, "schema": "/v2/schemas/images", "first": "/v2/images"}
        elif path.startswith("/v2/images/"):
            body = next((i for i in images if i["id"] == path.split("/")[3]), None)
            status = status if body is not None else "404 Not Found"
        else:
            status = "404 Not Found"
        data = json.dumps(body or {}).encode()
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]

    return app


def main(argv: list[str]) -> None:
    root = Path(argv[1]).resolve()
    nova_port, placement_port, image_port = (int(a) for a in argv[2:5])
    os.chdir(root)  # the databases are named relative to it
    os.environ["OS_PLACEMENT_CONFIG_DIR"] = str(root / "placement")
    from console.lab.cloud.confs import LAB_IMAGE_ID, LAB_IMAGE_NAME
    from console.lab.cloud.hosts import HOSTS_ENV, load_hosts

    os.environ[HOSTS_ENV] = str(root / "hosts.json")
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))  # Nova's service threads are not daemons

    from nova.tests import fixtures as nova_fixtures

    nova_fixtures.DatabaseWriteLock().setUp()

    from placement import wsgi as placement_wsgi

    from console.lab.cloud.wsgiserve import serve

    serve(placement_wsgi.init_application(), placement_port)

    import nova.conf
    from nova import config, objects
    from oslo_log import log as logging

    conf = nova.conf.CONF
    objects.register_all()
    config.parse_args([argv[0], "--config-file", str(root / "nova.conf")])
    logging.setup(conf, "nova")

    from nova.tests.fixtures import glance as glance_fixture
    from nova.tests.fixtures import neutron as neutron_fixture

    shim = _Fixtures()
    glance = shim.useFixture(glance_fixture.GlanceFixture(shim))
    glance.create(
        None,
        {
            "id": LAB_IMAGE_ID,
            "name": LAB_IMAGE_NAME,
            "status": "active",
            "visibility": "public",
            "container_format": "bare",
            "disk_format": "raw",
            "size": 0,
            "min_ram": 0,
            "min_disk": 0,
            "protected": False,
            "tags": [],
            "properties": {},
        },
    )
    serve(_image_app(glance, image_port), image_port)
    shim.useFixture(neutron_fixture.NeutronFixture(shim))

    from console.lab.cloud import virt

    sys.modules["nova.virt.lab"] = virt  # Nova imports nova.virt.<compute_driver>

    from nova import context, service
    from nova.compute import rpcapi as compute_rpcapi

    service.Service.create(binary="nova-conductor", host=conf.host).start()
    service.Service.create(binary="nova-scheduler", host=conf.host).start()
    for host in load_hosts(root / "hosts.json"):
        service.Service.create(
            binary="nova-compute", host=host, topic=compute_rpcapi.RPC_TOPIC, topic_alt=compute_rpcapi.RPC_TOPIC_ALT
        ).start()
    from nova.objects import host_mapping

    host_mapping.discover_hosts(context.get_admin_context())  # `nova-manage cell_v2 discover_hosts`

    from nova.api.openstack import wsgi_app
    from paste import deploy

    wsgi_app._setup_service(conf.host, "osapi_compute")
    serve(deploy.loadapp(f"config:{conf.wsgi.api_paste_config}", name="osapi_compute"), nova_port)
    print(f"nova serving on 127.0.0.1:{nova_port}", flush=True)
    (root / "nova.ready").write_text(str(os.getpid()))
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main(sys.argv)
