"""Validation and create-time defaulting of incoming objects (422 Invalid like the API server)."""

from __future__ import annotations

import re
import uuid
from typing import Any

from console.lab.kubeapi.status import ApiError, invalid
from console.lab.resources import ResourceType

Obj = dict[str, Any]

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")

_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_DNS_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_LABEL_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)

Cause = tuple[str, str, str]  # (reason, message, field)


def _bad(field: str, value: Any, msg: str) -> Cause:
    return ("FieldValueInvalid", f'Invalid value: "{value}": {msg}', field)


def _required(field: str) -> Cause:
    return ("FieldValueRequired", "Required value", field)


def _label_key_errors(key: str, field: str) -> list[Cause]:
    prefix, _, name = key.rpartition("/")
    errs = []
    if prefix and (len(prefix) > 253 or not _SUBDOMAIN.match(prefix)):
        errs.append(_bad(field, key, "prefix part " + _SUBDOMAIN_MSG))
    if not name or len(name) > 63 or not _LABEL_NAME.match(name):
        errs.append(_bad(field, key, _LABEL_NAME_MSG if name and len(name) <= 63 else
                         "name part must be non-empty and no more than 63 characters"))
    return errs


def _meta_errors(rt: ResourceType, meta: Obj) -> list[Cause]:
    errs: list[Cause] = []
    name = meta.get("name", "")
    if name and rt.key != "events":
        if rt.key == "namespaces" and not (len(name) <= 63 and _DNS_LABEL.match(name)):
            errs.append(_bad("metadata.name", name, _DNS_LABEL_MSG))
        elif rt.key != "namespaces" and not (len(name) <= 253 and _SUBDOMAIN.match(name)):
            errs.append(_bad("metadata.name", name, _SUBDOMAIN_MSG))
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        errs.append(_bad("metadata.labels", labels, "must be a map of strings"))
        labels = {}
    for k, v in labels.items():
        errs.extend(_label_key_errors(k, "metadata.labels"))
        if not isinstance(v, str) or len(v) > 63 or not _LABEL_VALUE.match(v):
            errs.append(_bad("metadata.labels", v, _LABEL_VALUE_MSG))
    for k in meta.get("annotations") or {}:
        errs.extend(_label_key_errors(k, "metadata.annotations"))
    return errs


def _pod_errors(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec.containers")]
    containers = spec.get("containers")
    if not containers:
        return [_required("spec.containers")]
    errs = []
    for i, c in enumerate(containers):
        if not c.get("name"):
            errs.append(_required(f"spec.containers[{i}].name"))
        if not c.get("image"):
            errs.append(_required(f"spec.containers[{i}].image"))
    return errs


def _rule_errors(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec")]
    rules = spec.get("rules")
    if not isinstance(rules, list):
        return [_required("spec.rules")] if rules is None else [
            ("FieldValueTypeInvalid", f'Invalid value: "{type(rules).__name__}": spec.rules in body must be of '
             "type array", "spec.rules")]
    errs = []
    for i, r in enumerate(rules):
        if not isinstance(r, dict) or not isinstance(r.get("name"), str):
            errs.append(_required(f"spec.rules[{i}].name"))
    return errs


def _configmap_errors(obj: Obj) -> list[Cause]:
    return [
        _bad(f"data[{k}]", k, "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
             "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")
        for k in (obj.get("data") or {})
        if not _CONFIG_KEY.match(k)
    ]


# metav1.MicroTime's JSON form (apimachinery RFC3339Micro "2006-01-02T15:04:05.000000Z07:00"); Go's time.Parse
# wants exactly six fractional digits for that layout, so "…:05Z" or "…:05.123Z" fail to decode (400)
_MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$")


def _lease_errors(obj: Obj) -> list[Cause]:
    """pkg/apis/coordination/validation ValidateLeaseSpec, plus MicroTime decoding (a 400, not a 422)."""
    spec = obj.get("spec") or {}
    for f in ("acquireTime", "renewTime"):
        v = spec.get(f)
        if v is not None and not (isinstance(v, str) and _MICRO_TIME.match(v)):
            raise ApiError(400, f'Lease in version "v1" cannot be handled as a Lease: parsing time "{v}" as '
                           '"2006-01-02T15:04:05.000000Z07:00": cannot parse as RFC3339Micro')
    errs = []
    duration, transitions = spec.get("leaseDurationSeconds"), spec.get("leaseTransitions")
    if duration is not None and (not isinstance(duration, int) or duration <= 0):
        errs.append(_bad("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    if transitions is not None and (not isinstance(transitions, int) or transitions < 0):
        errs.append(_bad("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    return errs


_CHECKS = {
    "pods": _pod_errors,
    "leases.coordination.k8s.io": _lease_errors,
    "nodefeaturerules.nfd.k8s-sigs.io": _rule_errors,
    "configmaps": _configmap_errors,
}


def validate(rt: ResourceType, obj: Obj) -> None:
    """Raise 422 Invalid for an object the real API would refuse."""
    meta = obj.get("metadata") or {}
    errs = _meta_errors(rt, meta)
    check = _CHECKS.get(rt.key)
    if check:
        errs.extend(check(obj))
    if errs:
        raise invalid(rt, meta.get("name") or meta.get("generateName", ""), errs)


def check_type(rt: ResourceType, obj: Any) -> None:
    """400 BadRequest for a body that is not this resource's kind."""
    if not isinstance(obj, dict):
        raise ApiError(400, "the body of the request was in an unknown format")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version and api_version != rt.api_version:
        raise ApiError(400, f"the API version in the data ({api_version}) does not match the expected API "
                       f"version ({rt.api_version})")
    if kind and kind != rt.kind:
        raise ApiError(400, f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")
    if not isinstance(obj.get("metadata", {}), dict):
        raise ApiError(400, "metadata must be an object")


def _qos(spec: Obj) -> str:
    requests_any, guaranteed = False, True
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            requests_any = True
        for r in ("cpu", "memory"):
            if r not in lim or req.get(r, lim[r]) != lim[r]:
                guaranteed = False
    if not requests_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def default_on_create(rt: ResourceType, obj: Obj) -> None:
    """The defaults and create-time status the API server sets (in place)."""
    if rt.key == "pods":
        spec = obj.setdefault("spec", {})
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("securityContext", {})
        spec.setdefault("priority", 0)
        for c in spec.get("containers") or []:
            c.setdefault("resources", {})
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            image = c.get("image", "")
            c.setdefault("imagePullPolicy", "Always" if image.endswith(":latest") or ":" not in image else
                         "IfNotPresent")
        obj["status"] = {"phase": "Pending", "qosClass": _qos(spec)}
    elif rt.key == "namespaces":
        meta = obj.setdefault("metadata", {})
        if meta.get("name"):
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj["status"] = {"phase": "Active"}
    elif rt.key == "events":
        obj.setdefault("count", 1)
    elif rt.group in ("apps", "policy"):
        from console.lab.kubeapi.apps import defaults
        from console.lab.resources import RESOURCES

        defaults(rt.key, obj, lambda pod_spec: default_on_create(RESOURCES["pods"], {"spec": pod_spec}))
    elif rt.key == "jobs.batch":
        _job_defaults(obj)


def _job_defaults(job: Obj) -> None:
    """pkg/apis/batch/v1/defaults.go SetDefaults_Job, then pkg/registry/batch/job/strategy.go generateSelector:
    the template labelled with the job's name and uid (both label forms), the selector on the uid (given here,
    as the API server's FillObjectMetaSystemFields gives it before PrepareForCreate); status starts empty."""
    from console.lab.resources import RESOURCES

    meta = job.setdefault("metadata", {})
    spec = job.setdefault("spec", {})
    template = spec.setdefault("template", {})
    tmeta = template.setdefault("metadata", {})
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
    if tmeta.get("labels") and not meta.get("labels"):
        meta["labels"] = dict(tmeta["labels"])
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")
    spec.setdefault("manualSelector", False)
    default_on_create(RESOURCES["pods"], {"spec": template.setdefault("spec", {})})
    if not spec["manualSelector"]:
        uid = meta.setdefault("uid", str(uuid.uuid4()))
        labels = tmeta["labels"] = tmeta.get("labels") or {}
        for key, value in (("job-name", meta.get("name")), ("batch.kubernetes.io/job-name", meta.get("name")),
                           ("controller-uid", uid), ("batch.kubernetes.io/controller-uid", uid)):
            if value:
                labels.setdefault(key, value)
        selector = spec["selector"] = spec.get("selector") or {}
        selector["matchLabels"] = selector.get("matchLabels") or {}
        selector["matchLabels"].setdefault("batch.kubernetes.io/controller-uid", uid)
    job["status"] = {}
