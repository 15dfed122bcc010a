"""The embedded lab's own dependencies, installed by the `lab` extra (`pip install 'console[lab]'`).

`console --help` and every command but the lab work without them; `console lab` and `console --lab` check
for them first and say what to install (exit 2) instead of failing on an import deep inside the lab.
"""

from __future__ import annotations

import importlib.util

# import names of pyproject.toml's `lab` extra (tests/unit/test_packaging.py keeps the two equal)
LAB_MODULES = ("aiohttp", "asyncssh", "mfusepy", "psutil", "cryptography", "nova", "placement", "keystone", "testtools",
               "wsgi_intercept")
INSTALL_HINT = "pip install 'console[lab]'"


def missing() -> list[str]:
    """The lab's modules this Python cannot import (found without importing them: mfusepy loads libfuse)."""
    out = []
    for name in LAB_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a broken or half-removed install
            found = False
        if not found:
            out.append(name)
    return out


def refuse_without_lab(prog: str = "console", *, as_json: bool = False) -> int | None:
    """Exit code 2 and one line on stderr (with -o json, the `lab-not-installed` error object on stdout) when the
    lab extra is not installed; None when it is."""
    from console.exit_codes import USAGE, print_error

    absent = missing()
    if not absent:
        return None
    return print_error(prog, as_json, "lab-not-installed",
                       f"the embedded lab needs: {INSTALL_HINT} (missing: {', '.join(absent)})", USAGE)
