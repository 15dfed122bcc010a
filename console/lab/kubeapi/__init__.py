"""The lab's Kubernetes API server (see server.py)."""

from console.lab.kubeapi.server import KubeAPI, start_kube_api

__all__ = ["KubeAPI", "start_kube_api"]
