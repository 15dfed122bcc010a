"""Inside a lab pod's network namespace: its end of the lab's pod network (console/lab/podnet.py).

Run by the host's python3 in the pod's sandbox (the standard library only: it imports nothing of the lab's), as
the container's first process:

    python3 -S podnet_forward.py [--listen HOST:PORT=SOCKET]... [--serve SOCKET=PORT]... -- PROGRAM ARG...

Every `--listen` address is bound before PROGRAM starts, so its first connection cannot be refused: what connects
there is carried to the Unix socket SOCKET (the API server's, a Service's, on the lab's side). Every `--serve`
socket is carried to the pod's own 127.0.0.1:PORT (a containerPort) for the lab's side. PROGRAM runs as a child;
this process ends with its exit status. SIGTERM is the program's: the container runtime sends it to every
process of the container, and this one keeps carrying connections until the program has ended.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading

CHUNK = 65536
Address = tuple[int, "str | tuple[str, int]"]  # (family, address) to connect to


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                s.shutdown(how)


def _relay(client: socket.socket, connect: Address) -> None:
    family, address = connect
    upstream = socket.socket(family, socket.SOCK_STREAM)
    try:
        upstream.connect(address)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _accept(listener: socket.socket, connect: Address) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_relay, args=(client, connect), daemon=True).start()


def _tcp(spec: str) -> tuple[str, int]:
    host, _, port = spec.rpartition(":")
    return host, int(port)


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print(
            "podnet_forward: usage: [--listen HOST:PORT=SOCKET]... [--serve SOCKET=PORT]... -- PROGRAM ARG...",
            file=sys.stderr,
        )
        return 125
    split = argv.index("--")
    opts, program = argv[:split], argv[split + 1 :]
    routes: list[tuple[socket.socket, Address]] = []
    for flag, spec in zip(opts[::2], opts[1::2], strict=True):
        left, _, right = spec.partition("=")
        if flag == "--listen":
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(_tcp(left))
            routes.append((listener, (socket.AF_UNIX, right)))
        else:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            if os.path.lexists(left):
                os.unlink(left)
            listener.bind(left)
            routes.append((listener, (socket.AF_INET, ("127.0.0.1", int(right)))))
        listener.listen(128)
    signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        child = os.fork()
    except OSError as e:
        print(f"podnet_forward: {e}", file=sys.stderr)
        return 125
    if child == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for listener, _ in routes:
            listener.close()
        try:
            os.execvp(program[0], program)
        except OSError as e:
            print(f"{program[0]}: {e.strerror}", file=sys.stderr)
            os._exit(127 if isinstance(e, FileNotFoundError) else 126)
    for listener, connect in routes:
        threading.Thread(target=_accept, args=(listener, connect), daemon=True).start()
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    return os.waitstatus_to_exitcode(status) if status & 0x7F == 0 else 128 + (status & 0x7F)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
