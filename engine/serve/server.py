"""Run ``exitlaw serve``: load the model once, bind, say when ready, serve until SIGINT/SIGTERM.

The socket is bound before the server starts (``port 0`` takes a free port, printed in the ready line),
to ``127.0.0.1`` unless another host is given. uvicorn serves the Starlette app; on SIGINT or SIGTERM it
stops accepting, lets requests in flight finish (up to ``graceful_s``), and :func:`serve` returns 0 after
the decode worker has stopped. One line on stdout says each of: loaded, ready (with the URL), shut down.
"""

from __future__ import annotations

import ipaddress
import signal
import socket
import sys
from typing import TextIO

import uvicorn

from exitlaw.engine.serve.app import ServeApp
from exitlaw.engine.serve.engine import ServeConfig, ServeEngine
from exitlaw.engine.serve.limits import ServeLimits
from exitlaw.engine.serve.scheduler import Scheduler


def bind(host: str, port: int) -> socket.socket:
    """A listening-ready TCP socket on ``host:port`` (``port 0``: a free one); a named error if it cannot bind.

    The socket is made with ``IPPROTO_TCP`` and ``TCP_NODELAY``: asyncio sets ``TCP_NODELAY`` on an
    accepted connection only when its socket's protocol says TCP, and accepted sockets take their
    protocol (and, on Linux, the option) from this one. Without it, Nagle's algorithm holds the
    response body back until the client's delayed ACK (about 40 ms on every keep-alive request)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        raise ValueError(f"cannot bind {host}:{port}: {err.strerror or err}") from None
    sock.set_inheritable(True)
    return sock


def _loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    cfg: ServeConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    api_key: str | None = None,
    limits: ServeLimits = ServeLimits(),
    graceful_s: float = 10.0,
    out: TextIO = sys.stdout,
) -> int:
    engine = ServeEngine(cfg, limits)
    print(
        f"exitlaw serve: loaded {engine.model_name} (method {cfg.method}, verifier {cfg.verifier}"
        + (f", budget {cfg.budget}" if cfg.method != "ar" else "")
        + f", device {engine.target.device}, batching {cfg.batching}"
        + (f" up to {cfg.max_batch} rows" if cfg.batching == "continuous" else "")
        + ")",
        file=out,
        flush=True,
    )
    if not api_key and not _loopback(host):
        print(
            f"exitlaw serve: warning: listening on {host} without --api-key: anyone who can reach this address "
            "can use the model",
            file=out,
            flush=True,
        )
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    scheduler = Scheduler(engine, cfg.max_batch) if cfg.batching == "continuous" else None
    app = ServeApp(engine, api_key, scheduler)
    url = f"http://{'[' + host + ']' if ':' in host else host}:{bound}"

    class _Server(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets=sockets)
            if not self.should_exit:
                print(
                    f"exitlaw serve: ready on {url} (port {bound}); model {engine.model_name!r}"
                    + ("; API key required" if api_key else ""),
                    file=out,
                    flush=True,
                )

    config = uvicorn.Config(
        app.starlette(),
        log_level="warning",
        timeout_graceful_shutdown=graceful_s,
        lifespan="off",
        access_log=False,
    )
    server = _Server(config)
    # uvicorn restores the handlers it found and re-raises the signal it caught once it has shut down:
    # handlers that ignore it make that re-raise a no-op, so a clean shutdown exits 0.
    previous = {s: signal.signal(s, lambda *_: None) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run(sockets=[sock])
    finally:
        app.close()
        sock.close()
        for s, h in previous.items():
            signal.signal(s, h)
    print("exitlaw serve: shut down cleanly", file=out, flush=True)
    return 0


__all__ = ["serve", "bind"]
