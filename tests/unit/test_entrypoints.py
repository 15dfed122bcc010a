"""`python -m console` and the installed `console` command are the same program."""

import subprocess
import sys
from pathlib import Path


def test_module_and_installed_command_agree():
    script = Path(sys.executable).parent / "console"
    assert script.exists(), "the project is not installed (pip install -e .)"
    by_module = subprocess.run([sys.executable, "-m", "console", "--help"], capture_output=True, text=True, timeout=60)
    by_script = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert by_module.returncode == by_script.returncode == 0, by_script.stderr
    for sub in ("lab", "nfd", "scale-up"):
        assert sub in by_script.stdout
    assert by_module.stdout.replace("__main__.py", "console") == by_script.stdout.replace("__main__.py", "console")


def test_context_and_kubeconfig_also_after_the_command() -> None:
    """`console scale-up NODE … --context X` as kubectl takes its global flags anywhere; before the command
    still works, and nothing given leaves None."""
    from console.cli import build_parser

    parse = build_parser().parse_args
    assert parse(["scale-up", "n", "--flavor", "f", "--context", "lab-viewer"]).context == "lab-viewer"
    assert parse(["--context", "a", "scale-up", "n", "--flavor", "f"]).context == "a"
    assert parse(["nfd", "apply", "-f", "x.yaml", "--kubeconfig", "/k"]).kubeconfig == "/k"
    assert parse(["scale-up", "n", "--flavor", "f"]).context is None
