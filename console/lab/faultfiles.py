"""Client files that make the lab's real servers answer with the faults admins meet (for the fault sweep).

Written beside the good ones in `<state>/faults/` when the lab starts; each one is a real fault of a real
server or socket, not a simulation in the client:
  kubeconfig-wrong-token  the API server answers 401 (a token it never issued)
  kubeconfig-forbidden    credentials the server authenticates as user `lab-nobody`, who has no RBAC binding: 403
  kubeconfig-wrong-ca     the lab server's URL, but the CA of a second throwaway CA: TLS verification fails
  kubeconfig-unreachable  https://127.0.0.1:<a closed port>: connection refused
  clouds.yaml             cloud `lab-wrong-password` (Keystone answers 401), `lab-wrong-project` (the right
                          password, a project that does not exist: 401) and `lab-keystone-down` (auth_url
                          on a closed port)
  libvirt-unreachable     a libvirt URI whose socket does not exist
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

NOBODY_USER = "lab-nobody"


@dataclass(frozen=True)
class FaultFiles:
    root: Path

    @property
    def wrong_token(self) -> Path:
        return self.root / "kubeconfig-wrong-token"

    @property
    def forbidden(self) -> Path:
        return self.root / "kubeconfig-forbidden"

    @property
    def wrong_ca(self) -> Path:
        return self.root / "kubeconfig-wrong-ca"

    @property
    def unreachable(self) -> Path:
        return self.root / "kubeconfig-unreachable"

    @property
    def clouds_yaml(self) -> Path:
        return self.root / "clouds.yaml"

    @property
    def libvirt_uri_file(self) -> Path:
        return self.root / "libvirt-unreachable"

    @property
    def libvirt_uri(self) -> str:
        return self.libvirt_uri_file.read_text().strip()


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released: connecting to it is refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_fault_files(root: Path, *, kube_url: str, ca_pem: bytes | None, write_nobody: Callable[[Path], None],
                      auth_url: str, os_password: str, project: str = "admin") -> FaultFiles:
    """`write_nobody(path)` writes a kubeconfig of user NOBODY_USER, as the API server authenticates users."""
    from console.lab.cloudsyaml import write_clouds_yaml
    from console.lab.kubeconfig import write_kubeconfig
    from console.lab.pki import CA

    files = FaultFiles(root)
    root.mkdir(parents=True, exist_ok=True)
    write_kubeconfig(files.wrong_token, kube_url, "lab-not-a-token-it-issued", user="lab-admin", ca_pem=ca_pem)
    write_nobody(files.forbidden)
    other_ca = CA("lab-other-ca").pair.cert_pem  # a CA that never signed the lab server's certificate
    write_kubeconfig(files.wrong_ca, kube_url, "unused", ca_pem=other_ca)
    write_kubeconfig(files.unreachable, f"https://127.0.0.1:{closed_port()}", "unused", ca_pem=ca_pem)
    write_clouds_yaml(files.clouds_yaml, "lab-wrong-password", auth_url=auth_url, username="admin",
                      password=os_password + "-wrong", project=project,
                      more={"lab-keystone-down": ("admin", "unused"), "lab-wrong-project": ("admin", os_password)})
    # the same Keystone path on a closed port; the right password for a project that does not exist (Keystone
    # answers 401 to a scope the user has no role on). The file keeps its 0600 mode.
    down = auth_url.replace(auth_url.split("/")[2], f"127.0.0.1:{closed_port()}", 1)
    text = _retarget(files.clouds_yaml.read_text(), "lab-keystone-down", auth_url=down)
    files.clouds_yaml.write_text(_retarget(text, "lab-wrong-project", project_name=f"{project}-no-such-project"))
    files.libvirt_uri_file.write_text(f"qemu+unix:///system?socket={root / 'no-libvirtd.sock'}\n")
    return files


def _retarget(text: str, cloud: str, **auth: str) -> str:
    import yaml

    doc = yaml.safe_load(text)
    doc["clouds"][cloud]["auth"].update(auth)
    return yaml.safe_dump(doc, sort_keys=False)
