"""console.nfd and console.discovery import without UI libraries or network clients."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_headless_imports() -> None:
    code = ("import sys, json\n"
            "import console.nfd.master, console.nfd.local, console.nfd.validation, console.discovery\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('textual', 'rich', 'kubernetes', 'aiohttp', 'openstack', 'libvirt', 'console'))))")
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    loaded = json.loads(p.stdout)
    assert not [m for m in loaded if not m.startswith("console")], loaded
    assert "console.tui" not in loaded
