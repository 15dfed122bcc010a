"""Responses read with `_preload_content=False` (the JSON as sent, decoded once, no model objects).

The kubernetes client's type hints give each API method its model's return type (V1NodeList, object, …); with
that flag it returns urllib3's HTTPResponse instead. These say so, once, for the type checker.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from urllib3 import BaseHTTPResponse


def raw(resp: object) -> BaseHTTPResponse:
    """The HTTP response an API call made with `_preload_content=False` returned."""
    return cast("BaseHTTPResponse", resp)


def raw_json(resp: object) -> Any:
    """Its body, decoded: a dict for an object or a list, as the API server sent it."""
    return json.loads(raw(resp).data)
