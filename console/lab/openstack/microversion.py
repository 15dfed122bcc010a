"""The OpenStack-API-Version request header (API-WG microversion guideline), as Nova and Placement read it."""

from __future__ import annotations

import re

from aiohttp import web


def requested(request: web.Request, service: str) -> str | None:
    """The version asked for `service` ("compute", "placement") in OpenStack-API-Version, else None."""
    value = None
    for part in request.headers.get("OpenStack-API-Version", "").split(","):
        name, _, ver = part.strip().partition(" ")
        if name.lower() == service and ver.strip():
            value = ver.strip()
    return value


class InvalidVersion(ValueError):
    """Not MAJOR.MINOR (nor "latest")."""


class UnacceptableVersion(ValueError):
    """Outside the service's minimum and maximum."""


def resolve(value: str | None, lowest: tuple[int, int], highest: tuple[int, int]) -> tuple[int, int]:
    """The version to serve: none asked = the minimum, "latest" = the maximum."""
    if value is None:
        return lowest
    if value.lower() == "latest":
        return highest
    m = re.fullmatch(r"(\d+)\.(\d+)", value)
    if not m:
        raise InvalidVersion(value)
    version = (int(m.group(1)), int(m.group(2)))
    if not lowest <= version <= highest:
        raise UnacceptableVersion(value)
    return version
