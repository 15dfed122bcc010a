"""`pip install .` in a fresh venv is the console alone (issue 12): the lab's packages are not installed (asyncssh,
mfusepy; aiohttp only as the Kubernetes client's own dependency), `console --help` works, the themes are the
package console.themes, and `console --lab` says what to install.

The install is pip's own (https://pip.pypa.io/en/stable/cli/pip_install/), from a copy of the tracked files (pip
builds in the source tree; the repository stays clean), pinned by constraints.txt as ./dev installs. `pip install
'.[lab]'` running the lab is tests/e2e/test_stories.py (./dev lab installs `.[lab]`).

The venv is fresh and resolves every dependency itself, but pip's cache is the caller's (`pip cache dir`, the one
./dev's own install filled; https://pip.pypa.io/en/stable/topics/caching/): downloads come from its HTTP cache and
libvirt-python's locally built wheel is reused, instead of a download and a C build per run under the test's HOME.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _pip_cache() -> dict[str, str]:
    """PIP_CACHE_DIR = the caller's pip cache (none if the caller's pip has its cache off)."""
    got = subprocess.run([sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True, timeout=120)
    where = got.stdout.strip()
    return {"PIP_CACHE_DIR": where} if got.returncode == 0 and where else {}


def _copy_tracked(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                           text=True, check=True).stdout.splitlines()
    for name in files:
        src = REPO / name
        if src.is_file() and not name.startswith(("screenshots/", "tests/")):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


@pytest.mark.slow
@pytest.mark.timeout(1200)  # pip downloads and builds (libvirt-python) on a loaded machine: minutes
def test_pip_install_dot_is_the_console_without_the_lab(tmp_path: Path) -> None:
    src, venv = tmp_path / "src", tmp_path / "venv"
    _copy_tracked(src)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "cfg"), XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_DATA_HOME=str(tmp_path / "data"), PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.update(_pip_cache())
    installed = subprocess.run([str(py), "-m", "pip", "install", "-q", "-c", str(REPO / "constraints.txt"), str(src)],
                               capture_output=True, text=True, env=env, timeout=900)
    assert installed.returncode == 0, installed.stderr[-3000:]

    listed = subprocess.run([str(py), "-m", "pip", "list", "--format", "json"], capture_output=True, text=True,
                            env=env, check=True, timeout=120).stdout
    dists = {d["name"].lower() for d in json.loads(listed)}
    assert "console" in dists and "textual" in dists and "kubernetes" in dists
    assert not {"asyncssh", "mfusepy"} & dists, sorted(dists)
    # the console asks for the lab's packages only under its `lab` extra; aiohttp itself still arrives with the
    # Kubernetes client from v36 on (its kubernetes.aio requires it), so it is checked as the console's requirement
    requires = subprocess.run([str(py), "-c", "import importlib.metadata as m, json; "
                               "print(json.dumps(m.requires('console')))"],
                              capture_output=True, text=True, env=env, cwd=tmp_path, check=True, timeout=120).stdout
    for dist in ("aiohttp", "asyncssh", "mfusepy", "psutil"):
        (req,) = [r for r in json.loads(requires) if r.lower().startswith(dist)]
        assert 'extra == "lab"' in req, req

    console = venv / "bin" / "console"
    helped = subprocess.run([str(console), "--help"], capture_output=True, text=True, env=env, cwd=tmp_path,
                            timeout=120)
    assert helped.returncode == 0, helped.stderr[-2000:]
    assert "usage: console" in helped.stdout and "scale-up" in helped.stdout

    # the themes are data of the installed package, and no top-level `themes` package is installed
    where = subprocess.run([str(py), "-c", "from console.tui.themes import shipped_dir, load_themes; "
                            "import importlib.util as u, json; d = shipped_dir(); print(d); "
                            "print(json.dumps(sorted(load_themes([d]).themes))); print(u.find_spec('themes'))"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True, timeout=120).stdout
    shipped, names, top_level = where.splitlines()
    assert Path(shipped).parts[-2:] == ("console", "themes") and "site-packages" in shipped
    assert {"dark", "light", "high-contrast"} <= set(json.loads(names))
    assert top_level == "None"

    lab = subprocess.run([str(console), "--lab"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert lab.returncode == 2
    assert "the embedded lab needs: pip install 'console[lab]'" in lab.stderr
