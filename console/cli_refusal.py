"""The runs' refusals as the headless commands say them (`scale-up`, its `--revert` and `--discard`, `plan --apply`):
one line on stderr and, with `-o json`, the error object of console/exit_codes.py with the refusal's facts."""

from __future__ import annotations

import argparse
from typing import Any

from console.exit_codes import DECLINED, USAGE, print_error


def refused(prefix: str, args: argparse.Namespace, message: str, kind: str, code: int = USAGE, /,
            **details: Any) -> int:
    """Refused before any change (a plan, a journal, another run holding the node): exit 2, with the facts in
    `details` (the Lease holder, the journal, the drain's pods); a `status` there replaces "refused"."""
    details.pop("error", None)  # the kind given
    status = details.pop("status", "refused")
    return print_error(prefix, getattr(args, "output", "") == "json", kind, message, code, status=status, **details)


def declined(prefix: str, args: argparse.Namespace, message: str) -> int:
    """Not confirmed (answered no, or no terminal and no --yes): exit 5, nothing changed."""
    return print_error(prefix, getattr(args, "output", "") == "json", "not-confirmed", message, DECLINED,
                       status="not-confirmed")
