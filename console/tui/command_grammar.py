"""The `:` command bar grammar (pure): `:nodes`, `:pending`, `:hooks`, `:rules`, `:node NAME`,
`:ctx NAME`, `:scale-up NODE`, `:theme NAME`, `:help`, `:q`."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

# canonical name -> (aliases, argument: None | "required" | "optional", help)
COMMANDS: dict[str, tuple[tuple[str, ...], str | None, str]] = {
    "nodes": (("no", "node", "nodes"), "optional", "nodes (with NAME: that node's detail)"),
    "pending": (("pending", "po", "pods"), None, "Pending pods and where they would fit"),
    "hooks": (("hooks", "hook"), None, "NFD hooks and feature files"),
    "rules": (("rules", "rule", "nfr"), None, "NodeFeatureRules"),
    "ctx": (("ctx", "context", "contexts"), "optional", "switch kube context (no NAME: pick one)"),
    "scale-up": (("scale-up", "scaleup", "su"), "required", "scale up NODE's VM"),
    "theme": (("theme",), "optional", "switch theme"),
    "help": (("help", "h", "?"), None, "keys of the current screen"),
    "quit": (("q", "quit", "q!", "exit"), None, "quit"),
}
_ALIASES = {alias: name for name, (aliases, _, _) in COMMANDS.items() for alias in aliases}


class CommandError(ValueError):
    """Unknown command or bad argument; the message suggests what to type."""


@dataclass(frozen=True)
class Command:
    name: str
    arg: str = ""


def parse_command(text: str) -> Command:
    text = text.strip()
    if text.startswith(":"):
        text = text[1:].strip()
    if not text:
        raise CommandError("empty command; try :nodes, :pending, :hooks, :rules, :ctx, :q")
    word, _, rest = text.partition(" ")
    name = _ALIASES.get(word.lower())
    if name is None:
        close = suggestions(word)
        hint = f" — did you mean {' or '.join(':' + c for c in close)}?" if close else ""
        raise CommandError(f"unknown command :{word}{hint} (known: {', '.join(':' + c for c in COMMANDS)})")
    arg = rest.strip()
    kind = COMMANDS[name][1]
    if kind is None and arg:
        raise CommandError(f":{name} takes no argument")
    if kind == "required" and not arg:
        raise CommandError(f":{name} needs an argument, e.g. :{name} kube-worker02")
    if " " in arg:
        raise CommandError(f":{name} takes one argument, got {arg!r}")
    if name == "nodes" and arg:
        return Command("node", arg)
    return Command(name, arg)


def suggestions(word: str) -> list[str]:
    """The command (canonical name, as help lists it) closest to a mistyped word, if any: `nodse` -> nodes.
    Compared with every alias by difflib's ratio (as Python's own "did you mean" for names, Lib/traceback.py
    uses a similar edit distance), an alias standing for its command; never a prefix guess (`:no` for `nodse`)."""
    close = difflib.get_close_matches(word.lower(), list(_ALIASES), n=1, cutoff=0.6)
    return [_ALIASES[a] for a in close]


def completions(prefix: str) -> list[str]:
    """Command words starting with `prefix` (for the bar's suggester)."""
    p = prefix.lstrip(":").lower()
    return sorted(c for c in COMMANDS if c.startswith(p)) if p else sorted(COMMANDS)
