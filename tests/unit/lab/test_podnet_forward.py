"""The pod's end of the lab's pod network (console/lab/podnet_forward.py), run as the sandbox runs it: its
listeners are bound before the program starts (the program's first connection is carried, never refused), a
`--serve` socket reaches the pod's own port, and the program's exit status is the forwarder's."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

from console.lab import podnet_forward

FORWARDER = Path(podnet_forward.__file__)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _unix_echo(path: Path) -> socket.socket:
    """A Unix socket answering each connection with `echo:` and what it got."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"echo:" + conn.recv(100))

    threading.Thread(target=serve, daemon=True).start()
    return server


def test_the_program_reaches_a_listen_address_at_once_and_its_status_is_kept(tmp_path: Path) -> None:
    server = _unix_echo(tmp_path / "api")
    port = _free_port()
    client = (
        f"import socket; s = socket.create_connection(('127.0.0.1', {port})); s.sendall(b'hi');"
        "s.shutdown(socket.SHUT_WR); print(s.recv(100).decode()); raise SystemExit(7)"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-S",
            str(FORWARDER),
            "--listen",
            f"127.0.0.1:{port}={tmp_path / 'api'}",
            "--",
            sys.executable,
            "-c",
            client,
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    server.close()
    assert (done.returncode, done.stdout.strip()) == (7, "echo:hi"), done.stderr


def test_a_serve_socket_reaches_the_pods_own_port(tmp_path: Path) -> None:
    port = _free_port()
    sock = tmp_path / "pod-port"
    # the program listens on its port, then the test connects through the forwarder's Unix socket
    program = (
        f"import socket; s = socket.create_server(('127.0.0.1', {port})); c, _ = s.accept();"
        "c.sendall(b'from-pod:' + c.recv(100)); c.close()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-S", str(FORWARDER), "--serve", f"{sock}={port}", "--", sys.executable, "-c", program],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        answer = b""
        while not answer:  # the program's listener comes up after the forwarder's socket: retry until it answers
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
                try:
                    c.connect(str(sock))
                    c.sendall(b"x")
                    c.shutdown(socket.SHUT_WR)
                    answer = c.recv(100)
                except (FileNotFoundError, ConnectionRefusedError, ConnectionResetError, BrokenPipeError):
                    continue  # not listening yet: the forwarder closes, as a refused connection
        assert answer == b"from-pod:x"
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()


def test_a_program_that_cannot_start_is_127(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-S", str(FORWARDER), "--", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 127 and "missing" in done.stderr
