"""Keystone's process: its key repositories on first start, then its public WSGI application
(`keystone.server.wsgi.initialize_public_application`, what keystone-wsgi-public serves) on 127.0.0.1.

    python -m console.lab.cloud.keystone_main ROOT PORT

ROOT is the cloud's state directory (keystone/keystone.conf, the databases). Before serving, `keystone-manage
bootstrap` (its own process: it loads Keystone's backends, which a process loads once) makes or updates the admin
user, project and roles (reader ⊂ member ⊂ manager ⊂ admin, service), the region and Keystone's endpoints, with the
admin's password from the environment (not argv, which `ps` shows)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from console.lab.cloud.confs import ADMIN_PROJECT, ADMIN_USER, BOOTSTRAP_PASSWORD_ENV, REGION


def _key_repositories(root: Path) -> None:
    """`keystone-manage fernet_setup` and `credential_setup`: a repository with a primary key, each."""
    from keystone.common import fernet_utils

    for repo, group in ((root / "fernet-keys", "fernet_tokens"), (root / "credential-keys", "credential")):
        if repo.exists() and any(repo.iterdir()):
            continue
        keys = fernet_utils.FernetUtils(str(repo), 3, group)
        keys.create_key_directory()
        keys.initialize_key_repository()


def _bootstrap(root: Path, url: str) -> None:
    cmd = [
        str(Path(sys.executable).parent / "keystone-manage"),
        "--config-file",
        str(root / "keystone" / "keystone.conf"),
        "bootstrap",
        "--bootstrap-username",
        ADMIN_USER,
        "--bootstrap-project-name",
        ADMIN_PROJECT,
        "--bootstrap-role-name",
        "admin",
        "--bootstrap-service-name",
        "keystone",
        "--bootstrap-region-id",
        REGION,
        "--bootstrap-admin-url",
        url,
        "--bootstrap-internal-url",
        url,
        "--bootstrap-public-url",
        url,
    ]
    if BOOTSTRAP_PASSWORD_ENV not in os.environ:
        sys.exit(f"keystone_main: {BOOTSTRAP_PASSWORD_ENV} is not set")
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"keystone-manage bootstrap failed ({done.returncode}): {done.stderr.strip()[-3000:]}")


def main(argv: list[str]) -> None:
    root, port = Path(argv[1]).resolve(), int(argv[2])
    del sys.argv[1:]  # Keystone's configuration parses the command line
    os.chdir(root)  # the databases are named relative to it
    os.environ["OS_KEYSTONE_CONFIG_DIR"] = str(root / "keystone")
    _key_repositories(root)
    _bootstrap(root, f"http://127.0.0.1:{port}/v3")
    os.environ.pop(BOOTSTRAP_PASSWORD_ENV)
    from keystone.server import wsgi

    from console.lab.cloud.wsgiserve import serve

    app = wsgi.initialize_public_application()
    print(f"keystone serving on 127.0.0.1:{port}", flush=True)
    serve(app, port, background=False)


if __name__ == "__main__":
    main(sys.argv)
