"""A reused (keep-alive) connection is as quick as a fresh one (issue 51): the server's accepted sockets
have TCP_NODELAY, so Nagle's algorithm never waits for the client's delayed ACK (about 40 ms a request).

Measured in one run, through ``http.client.HTTPConnection`` kept open across requests, as clients and
load tools keep it: a reused connection's median ``GET /health`` must be at most max(15 ms, 3x) a fresh
connection's."""

from __future__ import annotations

import http.client
import statistics
import time

from exitlaw.engine.serve.limits import ServeLimits

from .conftest import StubEngine, running

REQUESTS = 40


def _get(conn: http.client.HTTPConnection) -> float:
    t0 = time.perf_counter()
    conn.request("GET", "/health")
    resp = conn.getresponse()
    body = resp.read()
    took = time.perf_counter() - t0
    assert resp.status == 200 and b"ok" in body
    return took


def test_a_reused_connection_is_not_slower_than_fresh_ones():
    with running(StubEngine(ServeLimits())) as (url, _):
        host = url.split("//")[1]
        fresh = []
        for _ in range(REQUESTS):
            conn = http.client.HTTPConnection(host, timeout=10)
            fresh.append(_get(conn))
            conn.close()
        conn = http.client.HTTPConnection(host, timeout=10)
        _get(conn)  # opens the connection
        sock = conn.sock
        reused = [_get(conn) for _ in range(REQUESTS)]
        assert conn.sock is sock  # one connection throughout: it was kept alive
        conn.close()
    fresh_ms, reused_ms = statistics.median(fresh) * 1e3, statistics.median(reused) * 1e3
    print(f"/health median: reused {reused_ms:.2f} ms, fresh {fresh_ms:.2f} ms")
    assert reused_ms <= max(15.0, 3 * fresh_ms), (reused_ms, fresh_ms)
