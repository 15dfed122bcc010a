"""Serving an aiohttp application over HTTPS on the lab's loop (kubelet endpoints, the token issuer)."""

from __future__ import annotations

import ssl

from aiohttp import web


async def serve(app: web.Application, host: str, port: int, context: ssl.SSLContext) -> tuple[web.AppRunner, int]:
    """The started runner and the port it listens on (`port` 0: one the kernel chose). A short shutdown
    timeout: a stopped server cuts its streams instead of draining them, as a dying process does."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port, ssl_context=context).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner, port or int(runner.addresses[0][1])
