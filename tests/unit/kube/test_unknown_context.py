"""A context name the kubeconfig does not have: one line naming the file and the contexts it has, from
console.kube.connection (the TUI's `:ctx NAME` and the CLI's --context), instead of the kubernetes library's
`Invalid kube-config file. Expected object with name NAME in kube-config/contexts list`
(kubernetes/config/kube_config.py ConfigNode.get_with_name; kubectl says `context was not found for specified
context: NAME`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from console.kube.connection import KubeConfigError, connect, require_context


def kubeconfig(tmp_path: Path) -> Path:
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "a",
           "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
           "users": [{"name": "u", "user": {"token": "t"}}],
           "contexts": [{"name": n, "context": {"cluster": "c", "user": "u"}} for n in ("a", "b", "c")]}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_connect_to_an_unknown_context_names_the_file_and_its_contexts(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path)
    with pytest.raises(KubeConfigError) as e:
        connect(str(path), "nosuch")
    assert str(e.value) == f'no context "nosuch" in {path}; contexts: a, b, c'
    with pytest.raises(KubeConfigError, match=r'^no context "nosuch" in '):
        require_context(str(path), "nosuch")
    require_context(str(path), "b")  # there: no error
    _, target = connect(str(path), "b")
    assert target.context == "b"
