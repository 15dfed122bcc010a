"""Decoding request bodies sent as `application/vnd.kubernetes.protobuf` (what client-go's typed clients send:
kubectl debug, create namespace, create deployment, the eviction of kubectl drain) into the JSON the lab stores.

Envelope (k8s.io/apimachinery/pkg/runtime/serializer/protobuf): the 4 bytes `k8s\\0`, then a runtime.Unknown
{typeMeta {apiVersion, kind}, raw, contentEncoding, contentType} whose `raw` is the object's message. Messages
are decoded from their field numbers in proto_schema.SCHEMA (generated from the generated.proto files), then
turned into the API's JSON: Time -> RFC 3339, Quantity -> its string, IntOrString -> int or string,
RawExtension / FieldsV1 -> embedded JSON, bytes -> base64, `inline` members flattened (Volume.volumeSource,
...), empty strings dropped (Go writes non-pointer strings even when empty; its JSON omits them).
"""

from __future__ import annotations

import base64
import json
import struct
from datetime import UTC, datetime
from typing import Any

from console.lab.kubeapi.proto_schema import SCHEMA
from console.lab.kubeapi.status import ApiError

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
# Go struct members tagged json:",inline" (their fields sit in the parent's JSON object)
INLINE = {("core.v1.Volume", "volumeSource"), ("core.v1.PersistentVolumeSpec", "persistentVolumeSource"),
          ("core.v1.EphemeralContainer", "ephemeralContainerCommon")}
_GROUPS = {"v1": "core.v1", "apps/v1": "apps.v1", "policy/v1": "policy.v1", "coordination.k8s.io/v1":
           "coordination.v1", "batch/v1": "batch.v1", "authorization.k8s.io/v1": "authorization.v1",
           "authentication.k8s.io/v1": "authentication.v1",
           "rbac.authorization.k8s.io/v1": "rbac.v1"}


class ProtobufError(ValueError):
    pass


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(buf):
            raise ProtobufError("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, raw value) in order."""
    out, i = [], 0
    while i < len(buf):
        val: Any
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            val, i = _varint(buf, i)
        elif wire == 1:
            val, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = _varint(buf, i)
            val, i = buf[i:i + n], i + n
        elif wire == 5:
            val, i = buf[i:i + 4], i + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((num, wire, val))
    return out


def _scalar(typ: str, wire: int, val: Any) -> Any:
    if typ == "string":
        return val.decode()
    if typ == "bytes":
        return base64.b64encode(val).decode()
    if typ == "bool":
        return bool(val)
    if typ in ("int32", "int64"):
        return val - (1 << 64) if val >= 1 << 63 else val  # negatives are sign-extended to 64 bits
    if typ in ("uint32", "uint64"):
        return val
    if typ == "double":
        return struct.unpack("<d", val)[0]
    if typ == "float":
        return struct.unpack("<f", val)[0]
    raise ProtobufError(f"unknown scalar {typ}")


def _special(name: str, buf: bytes) -> tuple[bool, Any]:
    """Messages whose JSON is not an object of their fields."""
    if name in ("meta.v1.Time", "meta.v1.MicroTime"):
        f = {n: v for n, _, v in _fields(buf)}
        secs, nanos = f.get(1, 0), f.get(2, 0)
        if not secs and not nanos:
            return True, None
        stamp = datetime.fromtimestamp(secs, tz=UTC)
        if name == "meta.v1.MicroTime":
            return True, stamp.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos // 1000:06d}Z"
        return True, stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    if name == "resource.Quantity":
        return True, next((v.decode() for n, _, v in _fields(buf) if n == 1), "0")
    if name == "intstr.IntOrString":
        f = {n: v for n, _, v in _fields(buf)}
        return True, (f.get(3, b"").decode() if f.get(1) == 1 else _scalar("int32", 0, f.get(2, 0)))
    if name in ("runtime.RawExtension", "meta.v1.FieldsV1"):
        raw = next((v for n, _, v in _fields(buf) if n == 1), b"")
        return True, json.loads(raw) if raw else None
    if name == "meta.v1.Duration":
        ns = next((v for n, _, v in _fields(buf) if n == 1), 0)
        return True, f"{ns / 1e9:g}s"
    return False, None


def decode_message(name: str, buf: bytes) -> Any:
    special, value = _special(name, buf)
    if special:
        return value
    schema = SCHEMA.get(name)
    if schema is None:
        raise ProtobufError(f"no schema for {name}")
    obj: dict[str, Any] = {}
    for num, wire, val in _fields(buf):
        field = schema.get(num)
        if field is None:
            continue  # a field newer than the schema: ignored, as an older server would
        key, label, typ = field
        if label == "m":
            ktype, vtype = typ.split(",")
            entry = {n: (n, v) for n, _, v in _fields(val)}
            k = _value(ktype, 2, entry[1][1]) if 1 in entry else ""
            obj.setdefault(key, {})[k] = _value(vtype, 2, entry[2][1]) if 2 in entry else _empty(vtype)
            continue
        if typ in ("int32", "int64", "bool", "uint32", "uint64") and wire == 2:  # packed repeated
            items, i = [], 0
            while i < len(val):
                v, i = _varint(val, i)
                items.append(_scalar(typ, 0, v))
            obj.setdefault(key, []).extend(items)
            continue
        value = _value(typ, wire, val)
        if label == "r":
            obj.setdefault(key, []).append(value)
        elif (name, key) in INLINE and isinstance(value, dict):
            obj.update(value)
        elif value is not None and value != "":
            obj[key] = value
    return obj


def _empty(typ: str) -> Any:
    return "" if typ == "string" else ({} if typ not in ("bool", "int32", "int64", "bytes") else None)


def _value(typ: str, wire: int, val: Any) -> Any:
    if "." in typ:
        if wire != 2:
            raise ProtobufError(f"{typ} sent with wire type {wire}")
        return decode_message(typ, val)
    return _scalar(typ, wire, val)


def decode(body: bytes) -> dict[str, Any]:
    """A runtime.Unknown envelope -> the object as JSON (apiVersion and kind from its typeMeta)."""
    if not body.startswith(MAGIC):
        raise ApiError(400, "the body of the request was in an unknown format - missing the protobuf prefix")
    try:
        unknown = {n: v for n, _, v in _fields(body[len(MAGIC):])}
        tm = {n: v.decode() for n, _, v in _fields(unknown.get(1, b""))}
        api_version, kind = tm.get(1, ""), tm.get(2, "")
        package = _GROUPS.get(api_version)
        name = next((n for n in (f"{package}.{kind}", f"meta.v1.{kind}") if n in SCHEMA), None)
        if name is None:
            raise ApiError(415, f"the lab cannot decode protobuf for {api_version}/{kind}; send "
                           "application/json", "UnsupportedMediaType")
        obj = decode_message(name, unknown.get(2, b""))
    except (ProtobufError, UnicodeDecodeError, KeyError, IndexError, struct.error) as err:
        raise ApiError(400, f"couldn't decode the protobuf body: {err}") from None
    return {"apiVersion": api_version, "kind": kind, **obj}
