"""Start and stop the lab's OpenStack (console/lab/cloud/__init__.py): the databases from the template, the
configuration, `keystone-manage bootstrap`, Keystone's process, the service users and the catalog (DevStack's
lib/keystone, lib/nova and lib/placement do the same with the `openstack` CLI), then Nova's process."""

from __future__ import annotations

import concurrent.futures
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from console.lab.cloud import template
from console.lab.cloud.confs import (
    ADMIN_PROJECT,
    ADMIN_USER,
    BOOTSTRAP_PASSWORD_ENV,
    REGION,
    SERVICE_PROJECT,
    CloudConf,
    Ports,
    Secrets,
)
from console.lab.cloud.hosts import FAULTS_FILE, HostSpec
from console.lab.controlplane import die_with_parent, free_port

Progress = Callable[[str], None]


class CloudError(Exception):
    """A service did not start; the message names it and ends with the tail of its log."""


class Cloud:
    def __init__(
        self,
        root: Path,
        hosts: Sequence[HostSpec],
        *,
        admin_password: str,
        allow_resize_to_same_host: bool = False,
        start_timeout: float = 180.0,
    ) -> None:
        self.root = Path(root)
        self.hosts = list(hosts)
        self.admin_password = admin_password
        self.start_timeout = start_timeout
        self.conf = CloudConf(
            self.root,
            Ports(free_port(), free_port(), free_port(), free_port()),
            Secrets(secrets.token_urlsafe(18), secrets.token_urlsafe(18)),
            allow_resize_to_same_host=allow_resize_to_same_host,
        )
        self._procs: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []
        # the services die with the lab (setpriv --pdeathsig), and "the parent" is the thread that started them:
        # one that lives until stop(), not the caller's, which may be a pool's short-lived worker
        self._spawner = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="lab-cloud-spawn")

    @property
    def auth_url(self) -> str:
        return self.conf.auth_url

    # -- start / stop -----------------------------------------------------------------------------------
    def start(self, progress: Progress = lambda _m: None) -> None:
        deadline = time.monotonic() + self.start_timeout
        template.install(self.root, progress)
        self.conf.write()
        (self.root / "hosts.json").write_text(json.dumps({"hosts": [asdict(h) for h in self.hosts]}))
        progress("starting Keystone")
        keystone = self._spawn(
            "keystone",
            [sys.executable, "-m", "console.lab.cloud.keystone_main", str(self.root), str(self.conf.ports.keystone)],
            env={BOOTSTRAP_PASSWORD_ENV: self.admin_password},
        )
        self._wait_http(self.auth_url, keystone, "keystone", deadline)
        self._register()
        progress(f"starting Nova and Placement ({len(self.hosts)} compute hosts)")
        ports = self.conf.ports
        nova = self._spawn(
            "nova",
            [
                sys.executable,
                "-m",
                "console.lab.cloud.nova_main",
                str(self.root),
                str(ports.nova),
                str(ports.placement),
                str(ports.image),
            ],
        )
        self._wait_http(self.conf.nova_url + "/", nova, "nova", deadline, ready=self.root / "nova.ready")

    def stop(self) -> None:
        for proc, log in reversed(self._procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            log.close()
        self._procs.clear()
        self._spawner.shutdown()

    def _spawn(self, name: str, cmd: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = open(self.root / f"{name}.log", "ab")  # noqa: SIM115 - closed in stop()
        proc = self._spawner.submit(
            subprocess.Popen,
            [*die_with_parent(), *cmd],
            cwd=self.root,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        ).result()
        self._procs.append((proc, log))
        return proc

    def _wait_http(
        self, url: str, proc: subprocess.Popen[bytes], name: str, deadline: float, ready: Path | None = None
    ) -> None:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise CloudError(f"{name} exited with {proc.returncode}: {self._tail(name)}")
            if ready is None or ready.exists():
                try:
                    with urllib.request.urlopen(url, timeout=5):
                        return
                except urllib.error.HTTPError:
                    return  # it answers
                except OSError:
                    pass
            time.sleep(0.1)
        raise CloudError(f"{name} did not answer at {url} within {self.start_timeout:.0f}s: {self._tail(name)}")

    def _tail(self, name: str) -> str:
        path = self.root / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return f"{path}: " + " | ".join(text.strip().splitlines()[-15:])

    def inject_fault(self, server_id: str, kind: str | None) -> None:
        """What the lab's hypervisor does on the server's next resize (console/lab/cloud/virt.py: "error",
        "stuck", "slow:N"); None clears it."""
        path = self.root / FAULTS_FILE
        faults = json.loads(path.read_text()) if path.exists() else {}
        if kind is None:
            faults.pop(server_id, None)
        else:
            faults[server_id] = kind
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(faults))
        tmp.replace(path)  # the driver never reads half a file

    # -- Keystone's contents ----------------------------------------------------------------------------
    def admin(self) -> Any:
        return self.connect(ADMIN_USER, self.admin_password, ADMIN_PROJECT)

    def connect(self, username: str, password: str, project: str) -> Any:
        import openstack

        return openstack.connection.Connection(
            auth_url=self.auth_url,
            username=username,
            password=password,
            project_name=project,
            user_domain_name="Default",
            project_domain_name="Default",
            region_name=REGION,
            interface="public",
            identity_api_version="3",
        )

    def _register(self) -> None:
        """The service project, Nova's and Placement's users (admin and service roles in it), and the compute,
        placement and image services with public and internal endpoints."""
        conn = self.admin()
        idn = conn.identity
        roles = {r.name: r for r in idn.roles()}
        service = idn.create_project(name=SERVICE_PROJECT, domain_id="default")
        for user, password in (("nova", self.conf.secrets.nova), ("placement", self.conf.secrets.placement)):
            u = idn.create_user(name=user, password=password, domain_id="default", default_project_id=service.id)
            for role in ("admin", "service"):
                idn.assign_project_role_to_user(service, u, roles[role])
        for name, kind, url in (
            ("nova", "compute", self.conf.nova_url),
            ("placement", "placement", self.conf.placement_url),
            ("glance", "image", self.conf.image_url),
        ):
            s = idn.create_service(name=name, type=kind, is_enabled=True)
            for interface in ("public", "internal"):
                idn.create_endpoint(service_id=s.id, interface=interface, url=url, region_id=REGION)
        conn.close()

    def add_user(self, name: str, password: str, project: str, roles: Sequence[str]) -> str:
        """A user with `roles` in `project` (created when missing); its id."""
        conn = self.admin()
        idn = conn.identity
        found = {r.name: r for r in idn.roles()}
        p = idn.find_project(project) or idn.create_project(name=project, domain_id="default")
        u = idn.create_user(name=name, password=password, domain_id="default", default_project_id=p.id)
        for role in roles:
            idn.assign_project_role_to_user(p, u, found[role])
        conn.close()
        return str(u.id)
