"""console: a terminal admin console for Kubernetes clusters on VMs."""

__version__ = "0.1.0"
