"""A minimal SOCKS5 proxy (RFC 1928: no authentication, CONNECT only) in a thread, for proxy-url tests.

Python has none built in. It records every CONNECT target, so a test can tell the client really went through
it; it relays bytes both ways until either side closes.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress


class Socks5Proxy:
    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.connects: list[tuple[str, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="socks5", daemon=True)

    @property
    def url(self) -> str:
        return f"socks5://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._server.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            ver, n = _exact(client, 2)
            _exact(client, n)  # the offered methods
            client.sendall(bytes([5, 0]))  # version 5, "no authentication required"
            ver, cmd, _, atyp = _exact(client, 4)
            if atyp == 1:
                host = socket.inet_ntoa(_exact(client, 4))
            elif atyp == 3:
                host = _exact(client, _exact(client, 1)[0]).decode()
            else:
                host = socket.inet_ntop(socket.AF_INET6, _exact(client, 16))
            port = struct.unpack("!H", _exact(client, 2))[0]
            if ver != 5 or cmd != 1:
                client.sendall(bytes([5, 7, 0, 1, 0, 0, 0, 0, 0, 0]))  # command not supported
                return
            upstream = socket.create_connection((host, port), timeout=10)
            upstream.settimeout(None)
            self.connects.append((host, port))
            client.sendall(bytes([5, 0, 0, 1]) + socket.inet_aton("0.0.0.0") + struct.pack("!H", 0))
        except (OSError, ValueError):
            client.close()
            return
        threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()
        _pipe(client, upstream)


def _exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ValueError("closed")
        data += chunk
    return data


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


@contextmanager
def socks5_proxy() -> Iterator[Socks5Proxy]:
    proxy = Socks5Proxy()
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
