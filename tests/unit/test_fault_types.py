"""Faults are classified by exception TYPE (isinstance, subclasses included), not by class-name strings.

console/faults.py resolves the client libraries' classes only from modules already imported (`loaded`), so
classifying never imports an SDK; the classes are the libraries' own: kubernetes.client.exceptions.ApiException,
kubernetes.config.config_exception.ConfigException, keystoneauth1.exceptions.base.ClientException,
openstack.exceptions.SDKException / HttpException (openstacksdk's exceptions.py), libvirt.libvirtError.
"""

from __future__ import annotations

import subprocess
import sys

from console.faults import EXIT_BAD_FILE, classify
from console.infra.inventory import VmListError
from console.kube.kubeconfig import KubeConfigError
from console.tui.errors import explain


class ContextMissing(KubeConfigError):
    """A subclass with its own name: a name check missed it."""


class KubeConfigErrorLookalike(Exception):
    pass


KubeConfigErrorLookalike.__name__ = KubeConfigErrorLookalike.__qualname__ = "KubeConfigError"


def test_a_subclass_of_a_console_error_is_classified_as_its_base():
    fault = classify(ContextMissing('context "nosuch" is not in /tmp/kubeconfig'))
    assert fault is not None and fault.kind == "bad-kubeconfig" and fault.exit_code == EXIT_BAD_FILE
    assert "nosuch" in fault.message


def test_a_foreign_class_with_the_same_name_is_not():
    assert classify(KubeConfigErrorLookalike("not ours")) is None


def test_a_subclass_of_the_kubernetes_api_exception_is_an_api_answer():
    from kubernetes.client.exceptions import ApiException

    class Gone(ApiException):  # defined outside kubernetes.client: the module-name check missed it
        pass

    fault = classify(Gone(status=403, reason="Forbidden"))
    assert fault is not None and fault.kind == "kube-forbidden"
    assert "HTTP 410 Gone" in explain(Gone(status=410, reason="Gone"))  # not a fault: the TUI's wording of an answer


def test_an_openstack_sdk_error_of_any_name_gets_the_openstack_wording():
    from openstack.exceptions import ResourceNotFound  # an HttpException whose name does not start with "Http"

    text = explain(ResourceNotFound("No Server found for worker-9"))
    assert text.startswith("OpenStack: No Server found for worker-9") and "clouds.yaml" in text


def test_a_vm_list_error_subclass_keeps_its_own_wording():
    class NovaDown(VmListError):
        pass

    assert explain(NovaDown("listing Nova servers: 503; check clouds.yaml / OS_CLOUD")) == \
        "listing Nova servers: 503; check clouds.yaml / OS_CLOUD"


def test_loaded_names_only_classes_of_imported_modules():
    from console.faults import loaded

    assert loaded("no.such.module:Error", "sys:version") == ()  # not imported; not an exception class
    assert loaded("console.kube.kubeconfig:KubeConfigError") == (KubeConfigError,)


def test_classifying_imports_no_sdk():
    code = ("import sys, console.faults as f\n"
            "assert f.classify(ValueError('x')) is None and f.classify(OSError('y')) is None\n"
            "heavy = sorted(m for m in ('kubernetes', 'openstack', 'keystoneauth1', 'libvirt', 'yaml', 'urllib3')"
            " if m in sys.modules)\n"
            "assert not heavy, heavy\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
