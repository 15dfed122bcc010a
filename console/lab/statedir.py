"""The files a running lab leaves for other processes: kubeconfig, clouds.yaml, openrc-member, env, ready."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StateDir:
    root: Path

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def clouds_yaml(self) -> Path:
        return self.root / "clouds.yaml"

    @property
    def openrc_member(self) -> Path:
        """OS_* variables of the project's member-role user (no clouds.yaml needed)."""
        return self.root / "openrc-member"

    @property
    def exec_plugin(self) -> Path:
        """The `lab-exec` context's exec credential plugin (holds the token signing key: 0700)."""
        return self.root / "exec-credential"

    @property
    def env(self) -> Path:
        return self.root / "env"

    @property
    def ready(self) -> Path:
        return self.root / "ready"

    def prepare(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.ready.unlink(missing_ok=True)

    def write_env(self, *, libvirt_uri: str, cloud: str = "lab", ssh_config: Path | None = None) -> None:
        values = {
            "KUBECONFIG": str(self.kubeconfig),
            "OS_CLIENT_CONFIG_FILE": str(self.clouds_yaml),
            "OS_CLOUD": cloud,
            "CONSOLE_LIBVIRT_URI": libvirt_uri,
        }
        if ssh_config is not None:  # the lab's nodes over SSH (Settings.ssh_config)
            values["CONSOLE_SSH_CONFIG"] = str(ssh_config)
        text = "".join(f"{k}={shlex.quote(v)}\n" for k, v in values.items())
        self.env.write_text(text)
        os.chmod(self.env, 0o600)

    def mark_ready(self) -> None:
        self.ready.write_text("")

    def clear_ready(self) -> None:
        self.ready.unlink(missing_ok=True)
