"""A WSGI app on 127.0.0.1, one thread per request (the services' own WSGI apps need no more here)."""

from __future__ import annotations

import socketserver
import threading
from typing import Any
from wsgiref import simple_server


class _ThreadingServer(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # the services log their requests themselves


def serve(app: Any, port: int, *, background: bool = True) -> simple_server.WSGIServer:
    server = simple_server.make_server(
        "127.0.0.1", port, app, server_class=_ThreadingServer, handler_class=_QuietHandler
    )
    if background:
        threading.Thread(target=server.serve_forever, daemon=True, name=f"wsgi-{port}").start()
    else:
        server.serve_forever()
    return server
