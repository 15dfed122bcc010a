"""Entry points: the TUI (default), `lab`, `nfd`, `scale-up`, `config`, `get`, `plan`.

Each subcommand lives in its own module (`cli_lab.py`, `cli_nfd.py`) exposing
`add_parser(subparsers)` and `run(args) -> int`; they are imported lazily so
`--help` and the TUI start fast.

Faults (console/faults.py) reaching `main` from any command end as one line `console: <what>: <why> — <what
to check>` on stderr, with `-o json` the error object on stdout, and exit 6 (a backend could not be used:
unreachable, TLS/CA, 401, 403 — nothing was changed) or 2 (a bad kubeconfig, clouds.yaml, config or theme).
Anything else is a bug: one line saying so and naming the log file under state_dir() that holds the
traceback, exit 70 (EX_SOFTWARE, sysexits.h). Library warnings (urllib3 retries, keystoneauth) go to that
log too, not to the screen. Ctrl-C that no command handles: `console: interrupted`, exit 130. A command line
argparse cannot take is `usage`, exit 2 — with `-o json` on it, the error object too. The error kinds and exit
codes are console/exit_codes.py's one list.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys
from pathlib import Path
from typing import ClassVar, NoReturn

from console import exit_codes

SUBCOMMANDS = {
    "lab": "console.cli_lab",
    "nfd": "console.cli_nfd",
    "scale-up": "console.cli_scaleup",
    "config": "console.cli_config",
    "get": "console.cli_get",
    "plan": "console.cli_plan",
}


def wants_json(argv: list[str]) -> bool:
    """Whether a command line asks for `-o json` (read before, or without, parsing it: a usage error)."""
    for i, arg in enumerate(argv):
        if arg in ("-o", "--output") and argv[i + 1:i + 2] == ["json"]:
            return True
        if arg in ("-ojson", "--output=json"):
            return True
    return False


class Parser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are the console's: with `-o json` on the command line, the error
    object (`usage`, exit 2) on stdout besides argparse's lines on stderr. Subcommand parsers are this class too
    (argparse makes them with the parent's class)."""

    argv: ClassVar[list[str]] = []  # the command line being parsed (main sets it)

    def error(self, message: str) -> NoReturn:
        as_json = wants_json(Parser.argv)
        if not as_json:
            self.print_usage(sys.stderr)
        exit_codes.print_error(f"{self.prog}: error", as_json, "usage", message, exit_codes.USAGE)
        sys.exit(exit_codes.USAGE)


def build_parser() -> argparse.ArgumentParser:
    from console import config

    parser = Parser(
        prog="console",
        description="Terminal console for Kubernetes clusters on VMs.",
        epilog=f"config file: {config.config_path()} (YAML; precedence: defaults < file < per-context < "
        f"CONSOLE_* environment < flags)\n{_config_file_help(config.__doc__)}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--lab", action="store_true", help="open the console on a freshly started embedded lab")
    parser.add_argument("--scenario", default="default", help="lab scenario with --lab (default: default)")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", help="kube context to use (default: the kubeconfig's current context)")
    parser.add_argument(
        "--theme", help="colour theme: dark, light, high-contrast or one in $XDG_DATA_HOME/console/themes"
    )
    parser.add_argument(
        "--read-only", action="store_true", default=None, help="hide every action that changes something"
    )
    parser.add_argument("--nfd-version", help="NFD version to assume for label naming (default: detected)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS.values():
        importlib.import_module(module).add_parser(sub)
    _accept_after_command(sub, ("--kubeconfig", "--context"))
    return parser


def _config_file_help(doc: str | None) -> str:
    """The config module's docstring after its summary line; empty under `python -OO`, which strips docstrings."""
    return doc.partition("\n\n")[2] if doc else ""


def _accept_after_command(sub: argparse._SubParsersAction, flags: tuple[str, ...]) -> None:
    """`console scale-up NODE … --context X` as well as `console --context X scale-up …` (kubectl takes its
    global flags anywhere); SUPPRESS keeps the value given before the command when none is given after."""
    seen: set[int] = set()
    todo = list(sub.choices.values())
    while todo:
        p = todo.pop()
        if id(p) in seen:
            continue
        seen.add(id(p))
        own = {o for a in p._actions for o in a.option_strings}
        for flag in flags:
            if flag not in own:
                p.add_argument(flag, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        todo.extend(c for a in p._actions if isinstance(a, argparse._SubParsersAction) for c in a.choices.values())


stdout_closed = exit_codes.stdout_closed


def as_json(args: argparse.Namespace) -> bool:
    return getattr(args, "output", None) == "json"


def config_error(args: argparse.Namespace, error: Exception) -> int:
    """A bad setting (console.config.ConfigError): one line on stderr, with -o json the error object, exit 2."""
    return exit_codes.print_error("console", as_json(args), "bad-config", str(error), exit_codes.USAGE)


EXIT_BUG = exit_codes.BUG  # an unexpected exception, the traceback is in log_path()


def log_path() -> Path:
    from console.config import state_dir

    return state_dir() / "console.log"


def _log_to_file() -> None:
    """Library loggers (urllib3's `Retrying ...`, keystoneauth's discovery notes) write to the log file: without
    a handler Python's last resort prints their warnings on stderr, between the console's own lines."""
    root = logging.getLogger()
    if root.handlers:
        return
    try:
        log_path().parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(log_path(), encoding="utf-8", delay=True)
        handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
    except OSError:
        handler = logging.NullHandler()
    handler.setLevel(logging.WARNING)
    root.addHandler(handler)


def _write_traceback(exc: BaseException) -> str:
    """Append the traceback to log_path() (not the screen); what to attach to the report."""
    import time
    import traceback

    try:
        log_path().parent.mkdir(parents=True, exist_ok=True)
        with open(log_path(), "a", encoding="utf-8") as f:
            f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {os.getpid()} console: unexpected error\n")
            f.write("".join(traceback.format_exception(exc)))
    except OSError as e:
        return f"the command line (the log {log_path()} cannot be written: {e.strerror})"
    return f"the traceback in {log_path()}"


def fault_exit(args: argparse.Namespace, exc: BaseException) -> int:
    """One line (and the JSON object with -o json) for a classified fault; the bug line otherwise."""
    from console import faults

    kubeconfig, context = getattr(args, "kubeconfig", None) or "", getattr(args, "context", None) or ""
    if not kubeconfig:  # the settings file may name it (a bad settings file is itself the fault then)
        with contextlib.suppress(Exception):
            from console.config import load

            kubeconfig = load({}).kubeconfig or ""
    fault = faults.classify(exc, faults.Where(kubeconfig, context))
    if fault is None:
        said = faults.describe(exc)[:200]
        said = said if said.startswith("unexpected error") else f"unexpected error: {said}"
        message = f"{said}; this is a bug, please report it with {_write_traceback(exc)}"
        fault = faults.Fault("bug", "console", message, "", EXIT_BUG)
        line = message
    else:
        line = fault.message
    extra = {"log": str(log_path())} if fault.kind == "bug" else {}
    return exit_codes.print_error("console", as_json(args), fault.kind, line, fault.exit_code, **extra)


def check_theme_flag(args: argparse.Namespace) -> None:
    """A broken theme named by --theme is a bad setting for every command (README "Exit codes": 2), headless
    ones too, before anything is done: FaultError `bad-theme`. A theme only the config file names is the TUI's
    business (it falls back to the default, with a notification)."""
    name = getattr(args, "theme", None)
    if not name:
        return
    from console.faults import EXIT_BAD_FILE, Fault, FaultError
    from console.tui.themes import broken_theme

    error = broken_theme(name)
    if error:
        raise FaultError(Fault("bad-theme", f"theme {name}", error, "", EXIT_BAD_FILE))


def main(argv: list[str] | None = None) -> int:
    from console.config import ConfigError

    Parser.argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.command != "lab":  # the lab logs its servers' errors to stderr, where its operator looks
        _log_to_file()
    try:
        check_theme_flag(args)
        if args.command:
            code = importlib.import_module(SUBCOMMANDS[args.command]).run(args)
        else:
            from console.cli_tui import run_tui

            code = run_tui(args)
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_closed()
        return 1  # what Python itself exits with on EPIPE
    except ConfigError as e:  # from any subcommand: settings are resolved before anything is done
        return config_error(args, e)
    except KeyboardInterrupt:  # Ctrl-C where no command handles it: one line, not a traceback
        return exit_codes.print_error("console", as_json(args), "interrupted", "interrupted", exit_codes.SIGINT)
    except Exception as e:  # faults of the backends and bad files, classified; anything else is a bug
        return fault_exit(args, e)
    return code


if __name__ == "__main__":
    sys.exit(main())
