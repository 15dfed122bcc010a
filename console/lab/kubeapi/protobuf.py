"""Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`), decoded to JSON shape.

kubectl's typed clients (`kubectl create deployment`, `kubectl debug`) post built-in kinds as protobuf:
the 4-byte magic `k8s\\x00`, then a runtime.Unknown {typeMeta {apiVersion, kind}, raw, contentEncoding,
contentType} whose `raw` is the object (k8s.io/apimachinery pkg/runtime/serializer/protobuf). Only the
messages and fields those commands write are known here (field numbers from k8s.io/api's
generated.proto); any other field gets 415, so nothing is dropped silently. Responses stay JSON, which
clients accept too.
"""

from __future__ import annotations

import struct
from datetime import UTC, datetime
from typing import Any

from console.lab.kubeapi.status import ApiError

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

# message: "number:name:type" with type prefixed * (repeated), {} (map<string, type>) or ^ (inlined in JSON)
_SCHEMA = {
    "Unknown": "1:typeMeta:TypeMeta 2:raw:bytes 3:contentEncoding:string 4:contentType:string",
    "TypeMeta": "1:apiVersion:string 2:kind:string",
    "apps.Deployment": "1:metadata:meta.ObjectMeta 2:spec:apps.DeploymentSpec 3:status:apps.DeploymentStatus",
    "apps.DeploymentSpec": "1:replicas:int32 2:selector:meta.LabelSelector 3:template:core.PodTemplateSpec "
                           "4:strategy:apps.DeploymentStrategy 5:minReadySeconds:int32 6:revisionHistoryLimit:int32 "
                           "7:paused:bool 9:progressDeadlineSeconds:int32",
    # what a create carries in status: the zero values gogo-protobuf writes for non-pointer fields
    "apps.DeploymentStatus": "1:observedGeneration:int64 2:replicas:int32 3:updatedReplicas:int32 "
                             "4:availableReplicas:int32 5:unavailableReplicas:int32 7:readyReplicas:int32 "
                             "8:collisionCount:int32 9:terminatingReplicas:int32",
    "core.PodStatus": "1:phase:string 3:message:string 4:reason:string 5:hostIP:string 6:podIP:string "
                      "7:startTime:Time 9:qosClass:string 11:nominatedNodeName:string 14:resize:string "
                      "17:observedGeneration:int64",
    "apps.DeploymentStrategy": "1:type:string 2:rollingUpdate:apps.RollingUpdateDeployment",
    "apps.RollingUpdateDeployment": "1:maxUnavailable:IntOrString 2:maxSurge:IntOrString",
    "core.Pod": "1:metadata:meta.ObjectMeta 2:spec:core.PodSpec 3:status:core.PodStatus",
    "core.PodTemplateSpec": "1:metadata:meta.ObjectMeta 2:spec:core.PodSpec",
    "core.PodSpec": "1:volumes:*core.Volume 2:containers:*core.Container 3:restartPolicy:string "
                    "4:terminationGracePeriodSeconds:int64 5:activeDeadlineSeconds:int64 6:dnsPolicy:string "
                    "7:nodeSelector:{}string 8:serviceAccountName:string 9:serviceAccount:string 10:nodeName:string "
                    "11:hostNetwork:bool 12:hostPID:bool 13:hostIPC:bool 14:securityContext:core.PodSecurityContext "
                    "15:imagePullSecrets:*core.LocalObjectReference 16:hostname:string 17:subdomain:string "
                    "19:schedulerName:string 20:initContainers:*core.Container "
                    "21:automountServiceAccountToken:bool 22:tolerations:*core.Toleration 24:priorityClassName:string "
                    "25:priority:int32 30:enableServiceLinks:bool 31:preemptionPolicy:string",
    "core.Container": "1:name:string 2:image:string 3:command:*string 4:args:*string 5:workingDir:string "
                      "6:ports:*core.ContainerPort 7:env:*core.EnvVar 8:resources:core.ResourceRequirements "
                      "9:volumeMounts:*core.VolumeMount 13:terminationMessagePath:string 14:imagePullPolicy:string "
                      "15:securityContext:core.SecurityContext 16:stdin:bool 17:stdinOnce:bool 18:tty:bool "
                      "20:terminationMessagePolicy:string",
    "core.ContainerPort": "1:name:string 2:hostPort:int32 3:containerPort:int32 4:protocol:string 5:hostIP:string",
    "core.EnvVar": "1:name:string 2:value:string",
    "core.ResourceRequirements": "1:limits:{}Quantity 2:requests:{}Quantity",
    "core.VolumeMount": "1:name:string 2:readOnly:bool 3:mountPath:string 4:subPath:string 5:mountPropagation:string",
    "core.Volume": "1:name:string 2:volumeSource:^core.VolumeSource",
    "core.VolumeSource": "1:hostPath:core.HostPathVolumeSource 2:emptyDir:core.EmptyDirVolumeSource "
                         "19:configMap:core.ConfigMapVolumeSource",
    "core.HostPathVolumeSource": "1:path:string 2:type:string",
    "core.EmptyDirVolumeSource": "1:medium:string 2:sizeLimit:Quantity",
    "core.ConfigMapVolumeSource": "1:localObjectReference:^core.LocalObjectReference 3:defaultMode:int32 "
                                  "4:optional:bool",
    "core.LocalObjectReference": "1:name:string",
    "core.SecurityContext": "1:capabilities:core.Capabilities 2:privileged:bool 4:runAsUser:int64 "
                            "5:runAsNonRoot:bool 6:readOnlyRootFilesystem:bool 7:allowPrivilegeEscalation:bool "
                            "8:runAsGroup:int64",
    "core.Capabilities": "1:add:*string 2:drop:*string",
    "core.PodSecurityContext": "2:runAsUser:int64 3:runAsNonRoot:bool 5:fsGroup:int64 6:runAsGroup:int64",
    "core.Toleration": "1:key:string 2:operator:string 3:value:string 4:effect:string 5:tolerationSeconds:int64",
    "meta.ObjectMeta": "1:name:string 2:generateName:string 3:namespace:string 4:selfLink:string 5:uid:string "
                       "6:resourceVersion:string 7:generation:int64 8:creationTimestamp:Time "
                       "9:deletionTimestamp:Time 10:deletionGracePeriodSeconds:int64 11:labels:{}string "
                       "12:annotations:{}string 13:ownerReferences:*meta.OwnerReference 14:finalizers:*string",
    "meta.OwnerReference": "1:kind:string 3:name:string 4:uid:string 5:apiVersion:string 6:controller:bool "
                           "7:blockOwnerDeletion:bool",
    "meta.LabelSelector": "1:matchLabels:{}string 2:matchExpressions:*meta.LabelSelectorRequirement",
    "meta.LabelSelectorRequirement": "1:key:string 2:operator:string 3:values:*string",
    "Time": "1:seconds:int64 2:nanos:int32",
    "IntOrString": "1:type:int64 2:intVal:int32 3:strVal:string",
    "Quantity": "1:string:string",
}
_KINDS = {("apps/v1", "Deployment"): "apps.Deployment", ("v1", "Pod"): "core.Pod"}


def _parse_schema() -> dict[str, dict[int, tuple[str, str, str]]]:
    out: dict[str, dict[int, tuple[str, str, str]]] = {}
    for msg, text in _SCHEMA.items():
        fields = {}
        for spec in text.split():
            num, name, typ = spec.split(":", 2)
            card = ""
            for mark in ("*", "{}", "^"):
                if typ.startswith(mark):
                    card, typ = mark, typ[len(mark):]
            fields[int(num)] = (name, card, typ)
        out[msg] = fields
    return out


_FIELDS = _parse_schema()
_SCALARS = {"string", "bytes", "int32", "int64", "bool"}


def _unsupported(what: str) -> ApiError:
    return ApiError(415, f"the body of the request was in an unknown format - the lab decodes no protobuf {what}; "
                    "accepted media types include: application/json, application/yaml", "UnsupportedMediaType")


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(buf):
            raise _unsupported("(truncated varint)")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    out: list[tuple[int, int | bytes]] = []
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            val, i = _varint(buf, i)
            out.append((num, val))
        elif wire == 2:
            n, i = _varint(buf, i)
            out.append((num, buf[i:i + n]))
            i += n
        elif wire == 1:
            out.append((num, struct.unpack_from("<q", buf, i)[0]))
            i += 8
        elif wire == 5:
            out.append((num, struct.unpack_from("<i", buf, i)[0]))
            i += 4
        else:
            raise _unsupported(f"wire type {wire}")
    return out


def _scalar(typ: str, val: int | bytes) -> Any:
    if typ in ("string", "bytes"):
        if not isinstance(val, bytes):
            raise _unsupported(f"{typ} as varint")
        return val.decode() if typ == "string" else val
    if not isinstance(val, int):
        raise _unsupported(f"{typ} as bytes")
    if typ == "bool":
        return bool(val)
    if val >= 1 << 63:
        val -= 1 << 64  # negative int64/int32 are 10-byte two's complement varints
    return val


def _value(typ: str, val: int | bytes) -> Any:
    if typ in _SCALARS:
        return _scalar(typ, val)
    if not isinstance(val, bytes):
        raise _unsupported(f"{typ} as varint")
    return decode_message(typ, val)


def decode_message(msg: str, buf: bytes) -> Any:
    """One message as JSON would carry it (gogo-protobuf writes empty strings and false; JSON omits them)."""
    schema = _FIELDS[msg]
    out: dict[str, Any] = {}
    for num, val in _fields(buf):
        if num not in schema:
            raise _unsupported(f"field {num} of {msg}")
        name, card, typ = schema[num]
        if card == "{}":
            entry = dict(_fields(val if isinstance(val, bytes) else b""))
            key = _scalar("string", entry.get(1, b""))
            out.setdefault(name, {})[key] = _value(typ, entry.get(2, b"" if typ != "bool" else 0))
        elif card == "*":
            out.setdefault(name, []).append(_value(typ, val))
        elif card == "^":
            out.update(_value(typ, val))
        else:
            out[name] = _value(typ, val)
    if msg == "Time":
        if not out.get("seconds"):
            return None
        return datetime.fromtimestamp(out["seconds"], UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if msg == "IntOrString":
        return out.get("intVal", 0) if out.get("type", 0) == 0 else out.get("strVal", "")
    if msg == "Quantity":
        return out.get("string", "0")
    # zero numbers stay: a pointer field such as replicas may be 0 on purpose
    return {k: v for k, v in out.items() if v is not None and v is not False and v != ""}


def decode(raw: bytes) -> dict[str, Any]:
    """A protobuf request body → the object dict (with apiVersion and kind), or 415."""
    if not raw.startswith(MAGIC):
        raise ApiError(400, "the body of the request was in an unknown format - provided object does not have "
                       "the protobuf magic prefix")
    unknown = decode_message("Unknown", raw[len(MAGIC):])
    tm = unknown.get("typeMeta") or {}
    msg = _KINDS.get((tm.get("apiVersion", ""), tm.get("kind", "")))
    if msg is None or unknown.get("contentEncoding"):
        raise _unsupported(f"{tm.get('apiVersion')}/{tm.get('kind')}")
    obj = decode_message(msg, unknown.get("raw", b""))
    return {"apiVersion": tm["apiVersion"], "kind": tm["kind"], **obj}
