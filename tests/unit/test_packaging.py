"""Packaging (issue 12, deliverable 5): the console alone without the lab's dependencies, the lab as the extra
`console[lab]`, themes inside the package, `python -OO` working.

Extras as PEP 508 / the packaging guide describe them (https://packaging.python.org/en/latest/specifications/
dependency-specifiers/#extras); setuptools' package-dir mapping (https://setuptools.pypa.io/en/latest/userguide/
package_discovery.html, "package-dir"). The real `pip install .` in a fresh venv is tests/e2e/test_install.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from console.labdeps import INSTALL_HINT, LAB_MODULES

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
# distribution name on PyPI -> the module it installs, where the two differ
MODULE_OF = {"google-re2": "re2", "PyYAML": "yaml", "PySocks": "socks", "libvirt-python": "libvirt",
             "textual[syntax]": "textual", "openstack-placement": "placement", "wsgi-intercept": "wsgi_intercept"}


def _dist(requirement: str) -> str:
    return re.split(r"==|>=|<|;", requirement, maxsplit=1)[0].strip()


def _imported_by_console() -> set[str]:
    """Top-level modules the console outside console/lab/ imports (at module or function level)."""
    found = set()
    for path in (REPO / "console").rglob("*.py"):
        if "lab" in path.relative_to(REPO / "console").parts[:1]:
            continue
        found |= set(re.findall(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", path.read_text(), flags=re.M))
    return found


def test_the_lab_extra_is_what_only_the_lab_imports() -> None:
    deps = PYPROJECT["project"]["dependencies"]
    lab = PYPROJECT["project"]["optional-dependencies"]["lab"]
    lab_modules = {MODULE_OF.get(_dist(r), _dist(r)) for r in lab}
    assert lab_modules == set(LAB_MODULES)  # console/labdeps.py checks for exactly these before a lab starts
    base = {MODULE_OF.get(_dist(r), _dist(r)) for r in deps}
    assert not base & lab_modules
    assert {"aiohttp", "asyncssh"} <= lab_modules
    assert not _imported_by_console() & lab_modules, "the console itself imports a lab-only dependency"
    dev = (REPO / "dev").read_text()
    assert re.search(r"need_venv lab\b(?!,)", dev) and re.search(r"need_venv test,lab\b", dev)


def test_themes_install_as_console_themes_and_no_top_level_package() -> None:
    tool = PYPROJECT["tool"]["setuptools"]
    assert tool["package-dir"]["console.themes"] == "themes"
    under_console = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "console").rglob("__init__.py")}
    assert set(tool["packages"]) == under_console | {"console.themes"}  # every package, and no `themes`
    assert "*.yaml" in PYPROJECT["tool"]["setuptools"]["package-data"]["*"]


# Run with the lab's modules made unimportable, as in a `pip install .` without the extra.
_WITHOUT_LAB = """
import importlib.abc, runpy, sys
BLOCKED = {blocked!r}
class NoLab(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, NoLab())
for m in list(sys.modules):
    if m.split(".")[0] in BLOCKED:
        del sys.modules[m]
{body}
"""


def _without_lab(body: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    code = _WITHOUT_LAB.format(blocked=LAB_MODULES, body=body)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env=env)


def test_without_the_lab_extra_every_console_module_imports() -> None:
    """Every module outside console/lab/ (the TUI, the CLI's commands, the gateways) imports without the
    lab's dependencies, so every non-lab command works in a `pip install .`."""
    body = (
        "import importlib, json, pkgutil, console\n"
        "bad = {}\n"
        "for info in pkgutil.walk_packages(console.__path__, 'console.'):\n"
        "    if info.name.startswith('console.lab.') or info.name in ('console.lab', 'console.__main__'):\n"
        "        continue\n"
        "    try:\n"
        "        importlib.import_module(info.name)\n"
        "    except ImportError as e:\n"
        "        bad[info.name] = str(e)\n"
        "print(json.dumps(bad))\n"
    )
    done = _without_lab(body)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == {}


@pytest.mark.parametrize("argv", [["--help"], ["nfd", "--help"], ["scale-up", "--help"], ["lab", "--help"]])
def test_without_the_lab_extra_help_works(argv: list[str]) -> None:
    done = _without_lab("sys.argv = ['console', *sys.argv[1:]]\nrunpy.run_module('console', run_name='__main__')",
                        *argv)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage: console" in done.stdout


@pytest.mark.parametrize("argv", [["--lab"], ["lab"]])
def test_without_the_lab_extra_the_lab_says_what_to_install(argv: list[str], tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "PYTHONPATH": str(REPO)}
    done = _without_lab("sys.argv = ['console', *sys.argv[1:]]\nrunpy.run_module('console', run_name='__main__')",
                        *argv, env=env)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"the embedded lab needs: {INSTALL_HINT}" in done.stderr
    assert "aiohttp" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_lab_extra_installed_here_refuses_nothing() -> None:
    from console.labdeps import missing

    assert missing() == []  # ./dev test installs .[test,lab]


@pytest.mark.parametrize("argv", [["--help"], ["nfd", "--help"], ["scale-up", "--help"], ["lab", "--help"]])
def test_python_OO_help(argv: list[str]) -> None:
    """`python -OO` strips docstrings (https://docs.python.org/3/using/cmdline.html#cmdoption-OO): the help
    must not be built by splitting one."""
    done = subprocess.run([sys.executable, "-OO", "-m", "console", *argv], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage: console" in done.stdout
    assert "config file:" in done.stdout or argv != ["--help"]
