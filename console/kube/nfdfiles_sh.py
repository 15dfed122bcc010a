"""The shell scripts HostPathTarget runs on a node (console/kube/nfdfiles.py), and the parsing of their output.

Written for a real POSIX sh with busybox or coreutils, since the default node-debug image is busybox
(`nsenter ... -- sh -c SCRIPT` runs them in the host's mount namespace, as SSH and the guest agent do):
no bash-isms; only `stat -L -c`, `sha256sum`, `base64 [-d]`, `mktemp`, `chmod`, `mv -f`, `rm -f`, `mkdir -p`,
`tr`, which both have. A debug pod's log mixes stdout and stderr, so every line meant for us starts with
MARK, and a script ends with `MARK end`: a log cut short (a kubelet restart) is told from a finished one.

A push writes the content (base64 in a here-document of the script) to a temp file, checks its sha256,
sets the mode, then `mv -f` renames it onto the name: rename(2) is atomic, so nfd-worker reads the old file
or the new one, never a part. The temp name starts with '.': nfd-worker skips hidden files from v0.15
(source/local/local.go getFeaturesFromFiles / getHooksFromDir: `strings.HasPrefix(fileName, ".")`);
older versions read every name, so there the temp goes to the parent directory when it is on the same
filesystem (a rename does not cross filesystems). An EXIT trap removes the temp whatever fails.

A push or remove carries the version the admin was shown (`expect`: the file's sha256, "" for no file). The same
script compares it with the file's sha256 right before the rename (or the removal), holding flock(1) on the
directory (util-linux, which kubelet's own mount and nsenter come from) for the two, so two console writes of
one node's directory cannot interleave their check and rename; where the node has no flock the check still runs
in the same script, right before the rename. A file that is no longer the version expected is left as it is:
`MARK conflict <sha256 | absent | ->` and, when small, its content (base64 between `begin` and `end`). rename(2)
itself cannot compare, so a writer that takes no lock (an editor over SSH) is only caught when it wrote before
the check. The lock is flock(2) on the directory, released when the script ends: nothing is left behind.
"""

from __future__ import annotations

import base64
import hashlib
import shlex
import textwrap
from dataclasses import dataclass, field

MARK = "@@nfdfiles"
MAX_FILES = 256  # a listing stops there (says "truncated"): the output stays bounded
HASH_MAX = 1024 * 1024  # larger files are listed without a hash (nfd-worker skips them anyway)
MAX_READ = 65536

_PRELUDE = f"""\
say() {{ printf '{MARK} %s\\n' "$*"; }}
"""
# compare-and-replace: `lock DIR` (flock on the directory, when the node has flock), `current FILE` (h: its sha256,
# "" when there is none, - when it is not a regular file), `conflict FILE` (what is there instead, then the end)
_CAS = f"""\
lock() {{ command -v flock >/dev/null 2>&1 || return 0; exec 9<"$1" && flock 9; }}
current() {{
  if [ -f "$1" ]; then h=$(sha256sum "$1") && h=${{h%% *}} || h=-
  elif [ -e "$1" ] || [ -L "$1" ]; then h=-
  else h=; fi
}}
conflict() {{
  say "conflict ${{h:-absent}}"
  if [ -f "$1" ]; then
    set -- "$1" $(stat -L -c %s "$1")
    if [ "${{2:-0}}" -le {MAX_READ} ]; then say begin; base64 "$1"; fi
  fi
  say end
  exit 0
}}
"""


def _q(text: str) -> str:
    return shlex.quote(text)


def list_script(directory: str, *, hidden: bool) -> str:
    """One line per regular file (as nfd-worker's os.Stat + IsRegular: symlinks followed):
    `MARK F <base64 name> <size> <octal mode> <mtime> <sha256 or ->`; `MARK nodir` when it does not exist."""
    globs = "* .[!.]* ..?*" if hidden else "*"
    return _PRELUDE + textwrap.dedent(f"""\
        d={_q(directory)}
        if [ ! -e "$d" ]; then say nodir; say end; exit 0; fi
        if [ ! -d "$d" ]; then say "error $d is not a directory"; exit 3; fi
        cd "$d" || {{ say "error cannot enter $d"; exit 3; }}
        n=0
        for f in {globs}; do
          [ -f "./$f" ] || continue
          n=$((n + 1))
          if [ "$n" -gt {MAX_FILES} ]; then say truncated; break; fi
          s=$(stat -L -c '%s %a %Y' "./$f") || continue
          set -- $s
          h=-
          if [ "$1" -le {HASH_MAX} ]; then h=$(sha256sum "./$f") && h=${{h%% *}} || h=-; fi
          b=$(printf '%s' "$f" | base64 | tr -d '\\n')
          say "F $b $1 $2 $3 $h"
        done
        say end
        """)


def read_script(directory: str, name: str) -> str:
    """`MARK begin`, the file's base64, `MARK end`; `MARK absent` when there is no such file."""
    return _PRELUDE + textwrap.dedent(f"""\
        f={_q(directory.rstrip("/") + "/" + name)}
        if [ ! -e "$f" ]; then say absent; say end; exit 0; fi
        if [ ! -f "$f" ]; then say "error $f is not a regular file"; exit 3; fi
        set -- $(stat -L -c %s "$f")
        if [ "$1" -gt {MAX_READ} ]; then say "error $f is $1 bytes, more than {MAX_READ}"; exit 3; fi
        say begin
        base64 "$f" || exit 4
        say end
        """)


def push_script(directory: str, name: str, content: bytes, mode: int, *, temp_outside: bool, expect: str) -> str:
    """Write `content` to directory/name atomically with `mode` while the file is still the version `expect`
    (its sha256, "" for none); `MARK unchanged` when the file already has this content and mode (nothing
    written), `MARK conflict …` when it is another version (nothing written), else `MARK written`. `MARK was
    <sha256> <mode>` first when a file was there."""
    want = hashlib.sha256(content).hexdigest()
    data = "\n".join(textwrap.wrap(base64.b64encode(content).decode(), 76))
    tdir = textwrap.dedent("""\
        p=${d%/*}; [ -n "$p" ] || p=/
        a=$(stat -c %d "$d") && b=$(stat -c %d "$p") && [ "$a" = "$b" ] && tdir=$p
        """) if temp_outside else ""
    return _PRELUDE + _CAS + textwrap.dedent(f"""\
        umask 077
        d={_q(directory.rstrip("/") or "/")}
        f="$d"/{_q(name)}
        want={want}
        expect={_q(expect)}
        mode={mode:o}
        if [ -d "$f" ]; then say "error $f is a directory"; exit 3; fi
        mkdir -p "$d" || {{ say "error cannot create $d"; exit 3; }}
        if [ -f "$f" ]; then
          h=$(sha256sum "$f") && h=${{h%% *}} || h=-
          set -- $(stat -L -c %a "$f")
          say "was $h $1"
          if [ "$h" = "$want" ] && [ "$1" = "$mode" ]; then say unchanged; say end; exit 0; fi
        fi
        tdir=$d
        """) + tdir + textwrap.dedent("""\
        tmp=$(mktemp "$tdir/.console-nfd.XXXXXX") || { say "error cannot create a temporary file in $tdir"; exit 3; }
        trap 'rm -f "$tmp"' EXIT
        trap 'exit 129' HUP
        trap 'exit 130' INT
        trap 'exit 143' TERM
        base64 -d >"$tmp" <<'CONSOLE_NFD_EOF' || { say "error cannot write $tmp"; exit 4; }
        """) + data + "\nCONSOLE_NFD_EOF\n" + textwrap.dedent("""\
        h=$(sha256sum "$tmp") && h=${h%% *} || h=-
        if [ "$h" != "$want" ]; then say "error $tmp does not hold the content sent (sha256 $h)"; exit 5; fi
        chmod "$mode" "$tmp" || { say "error cannot chmod $mode $tmp"; exit 6; }
        lock "$d" || { say "error cannot lock $d"; exit 8; }
        current "$f"
        if [ "$h" != "$want" ] && [ "$h" != "$expect" ]; then conflict "$f"; fi
        mv -f "$tmp" "$f" || { say "error cannot rename $tmp to $f"; exit 7; }
        say written
        say end
        """)


def remove_script(directory: str, name: str, *, expect: str) -> str:
    """Remove directory/name while it is the version `expect`: `MARK removed` (after `MARK was <sha256>`),
    `MARK absent` (nothing to do) or `MARK conflict …` (another version: left as it is)."""
    return _PRELUDE + _CAS + textwrap.dedent(f"""\
        d={_q(directory.rstrip("/") or "/")}
        f="$d"/{_q(name)}
        expect={_q(expect)}
        if [ -d "$f" ]; then say "error $f is a directory"; exit 3; fi
        if [ ! -e "$f" ] && [ ! -L "$f" ]; then say absent; say end; exit 0; fi
        lock "$d" || {{ say "error cannot lock $d"; exit 8; }}
        current "$f"
        if [ "$h" != "$expect" ]; then conflict "$f"; fi
        say "was $h"
        rm -f "$f" || {{ say "error cannot remove $f"; exit 3; }}
        say removed
        say end
        """)


@dataclass
class ScriptOutput:
    """Our lines of a script's output: `words` per MARK line, in order; `error` the first error line's text."""

    lines: list[list[str]] = field(default_factory=list)
    data: list[str] = field(default_factory=list)  # the lines between `begin` and `end` (read)
    ended: bool = False
    error: str = ""

    def has(self, word: str) -> bool:
        return any(ws and ws[0] == word for ws in self.lines)

    def first(self, word: str) -> list[str] | None:
        return next((ws for ws in self.lines if ws and ws[0] == word), None)


def parse_output(text: str) -> ScriptOutput:
    out = ScriptOutput()
    inside = False
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if line.startswith(MARK + " "):
            words = line[len(MARK) + 1:].split(" ")
            if words[0] == "begin":
                inside = True
            elif words[0] == "end":
                inside, out.ended = False, True
            elif words[0] == "error" and not out.error:
                out.error = line[len(MARK) + 1 + len("error "):]
            out.lines.append(words)
        elif inside:
            out.data.append(line.strip())
    return out


@dataclass(frozen=True)
class ListedFile:
    name: str
    size: int
    mode: int
    mtime: float
    sha256: str  # "" when not hashed (larger than HASH_MAX)


def listed_files(out: ScriptOutput) -> list[ListedFile]:
    files = []
    for ws in out.lines:
        if len(ws) != 6 or ws[0] != "F":
            continue
        try:
            name = base64.b64decode(ws[1], validate=True).decode("utf-8", errors="replace")
            files.append(ListedFile(name, int(ws[2]), int(ws[3], 8), float(ws[4]), "" if ws[5] == "-" else ws[5]))
        except ValueError:
            continue  # a line garbled in the log: the file is left out rather than misreported
    return files
