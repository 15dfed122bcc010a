"""Pod Security admission at pod create: the namespace's `pod-security.kubernetes.io/enforce` level.

Levels privileged (anything goes), baseline and restricted, with the checks,
their order and their texts from kubernetes/pod-security-admission
(policy/check_*.go, admission/admission.go): a refused pod gets 403 Forbidden
`pods "NAME" is forbidden: violates PodSecurity "LEVEL:VERSION": REASON (DETAIL), ...`,
VERSION from `pod-security.kubernetes.io/enforce-version` (default `latest`).
"""

from __future__ import annotations

from typing import Any

from console.lab.kubeapi.status import ApiError

Obj = dict[str, Any]
ENFORCE = "pod-security.kubernetes.io/enforce"
ENFORCE_VERSION = "pod-security.kubernetes.io/enforce-version"
LEVELS = ("privileged", "baseline", "restricted")
# capabilities baseline allows to add (policy/check_capabilities_baseline.go)
BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                 "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
RESTRICTED_VOLUMES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret")


def _containers(spec: Obj) -> list[Obj]:
    return [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]


def _quoted(names: list[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def _names(kind: str, names: list[str]) -> str:
    return f"{kind}s {_quoted(names)}" if len(names) > 1 else f"{kind} {_quoted(names)}"


def _sc(c: Obj) -> Obj:
    return c.get("securityContext") or {}


def violations(spec: Obj, level: str) -> list[str]:
    """The forbidden reasons for `level`, in the admission's order; [] when the pod is allowed."""
    if level not in ("baseline", "restricted"):
        return []
    out: list[str] = []
    hostns = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]
    if hostns:
        out.append(f"host namespaces ({', '.join(hostns)})")
    priv = [c["name"] for c in _containers(spec) if _sc(c).get("privileged")]
    if priv:
        out.append(f"privileged ({_names('container', priv)} must not set securityContext.privileged=true)")
    added = {}
    for c in _containers(spec):
        bad = [cap for cap in ((_sc(c).get("capabilities") or {}).get("add") or []) if cap not in BASELINE_CAPS]
        if bad:
            added[c["name"]] = bad
    if added:
        caps = sorted({cap for v in added.values() for cap in v})
        out.append(f"non-default capabilities ({_names('container', list(added))} must not include "
                   f"{_quoted(caps)} in securityContext.capabilities.add)")
    volumes = spec.get("volumes") or []
    host_paths = [v["name"] for v in volumes if "hostPath" in v]
    if host_paths and level == "baseline":
        out.append(f"hostPath volumes ({_names('volume', host_paths)})")
    ports = sorted({str(p["hostPort"]) for c in _containers(spec) for p in c.get("ports") or [] if p.get("hostPort")})
    if ports:
        with_ports = [c["name"] for c in _containers(spec) if any(p.get("hostPort") for p in c.get("ports") or [])]
        out.append(f"hostPort ({_names('container', with_ports)} uses {'hostPorts' if len(ports) > 1 else 'hostPort'} "
                   f"{', '.join(ports)})")
    if level == "baseline":
        return out
    escalate = [c["name"] for c in _containers(spec) if _sc(c).get("allowPrivilegeEscalation") is not False]
    if escalate:
        out.append(f"allowPrivilegeEscalation != false ({_names('container', escalate)} must set "
                   "securityContext.allowPrivilegeEscalation=false)")
    nodrop = [c["name"] for c in _containers(spec)
              if "ALL" not in ((_sc(c).get("capabilities") or {}).get("drop") or [])]
    if nodrop:
        out.append(f"unrestricted capabilities ({_names('container', nodrop)} must set "
                   'securityContext.capabilities.drop=["ALL"])')
    restricted = [(v["name"], t) for v in volumes for t in v if t != "name" and t not in RESTRICTED_VOLUMES]
    if restricted:
        names = [n for n, _ in restricted]
        types = sorted({t for _, t in restricted})
        out.append(f"restricted volume types ({_names('volume', names)} "
                   f"{'use' if len(names) > 1 else 'uses'} restricted volume "
                   f"{'types' if len(types) > 1 else 'type'} {_quoted(types)})")
    pod_sc = spec.get("securityContext") or {}
    if not pod_sc.get("runAsNonRoot"):
        root = [c["name"] for c in _containers(spec) if not _sc(c).get("runAsNonRoot")]
        if root:
            out.append(f"runAsNonRoot != true (pod or {_names('container', root)} must set "
                       "securityContext.runAsNonRoot=true)")
    if (pod_sc.get("seccompProfile") or {}).get("type") not in ("RuntimeDefault", "Localhost"):
        nosec = [c["name"] for c in _containers(spec)
                 if (_sc(c).get("seccompProfile") or {}).get("type") not in ("RuntimeDefault", "Localhost")]
        if nosec:
            out.append(f"seccompProfile (pod or {_names('container', nosec)} must set "
                       'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")')
    return out


def admit(namespace: Obj, pod: Obj) -> None:
    """Raise the admission's 403 when the namespace's enforce level forbids the pod."""
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    level = labels.get(ENFORCE, "privileged")
    if level not in LEVELS:
        level = "restricted"  # an invalid level enforces restricted (admission.go: policy parse errors)
    reasons = violations(pod.get("spec") or {}, level)
    if not reasons:
        return
    name = (pod.get("metadata") or {}).get("name", "")
    version = labels.get(ENFORCE_VERSION, "latest")
    raise ApiError(403, f'pods "{name}" is forbidden: violates PodSecurity "{level}:{version}": '
                   f"{', '.join(reasons)}", "Forbidden", {"name": name, "kind": "pods"})
