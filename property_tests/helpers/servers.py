"""Real `exitlaw serve` processes on loopback for the tests: started together, stopped by SIGTERM."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

HELPERS_ROOT = str(
    Path(__file__).resolve().parent.parent
)  # property_tests/: `helpers.*` importable by name
READY = re.compile(r"ready on (http://127\.0\.0\.1:(\d+))")


@dataclass
class Server:
    name: str
    proc: subprocess.Popen
    log: Path
    url: str | None = None

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self, timeout: float = 60.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode


def stop_all(servers, timeout: float = 60.0) -> None:
    """SIGTERM every server at once, then wait for each."""
    for s in servers:
        if s.proc.poll() is None:
            s.proc.send_signal(signal.SIGTERM)
    for s in servers:
        s.stop(timeout)


def start_servers(
    specs: dict[str, list[str]],
    logdir: Path,
    *,
    env: dict[str, dict] | None = None,
    timeout: float = 240.0,
) -> dict[str, Server]:
    """Start `exitlaw serve --port 0 ARGS` per name at once; wait for every ready line (the printed port)."""
    servers = {}
    for name, args in specs.items():
        log = logdir / f"{name}.log"
        e = {
            k: v for k, v in os.environ.items() if k != "EXITLAW_API_KEY"
        }  # a key only where asked
        e.update(PYTHONPATH=HELPERS_ROOT, PYTHONUNBUFFERED="1", **(env or {}).get(name, {}))
        with log.open("w") as fh:  # the child keeps its own descriptor
            proc = subprocess.Popen(
                [sys.executable, "-m", "exitlaw", "serve", "--port", "0", "--threads", "1", *args],
                stdout=fh,
                stderr=subprocess.STDOUT,
                env=e,
                start_new_session=True,
            )
        servers[name] = Server(name, proc, log)
    deadline = time.monotonic() + timeout
    try:
        for s in servers.values():
            while s.url is None:
                m = READY.search(s.text())
                if m:
                    s.url = m.group(1)
                elif s.proc.poll() is not None:
                    raise RuntimeError(
                        f"server {s.name} exited {s.proc.returncode}:\n{s.text()[-2000:]}"
                    )
                elif time.monotonic() > deadline:
                    raise RuntimeError(
                        f"server {s.name} not ready in {timeout:g} s:\n{s.text()[-2000:]}"
                    )
                else:
                    time.sleep(0.2)
    except BaseException:
        stop_all(servers.values())
        raise
    return servers


def post(
    url: str, payload, *, key: str | None = None, raw: bytes | None = None, timeout: float = 60.0
):
    """``(status, parsed JSON body or text)`` of a POST."""
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    data = raw if raw is not None else json.dumps(payload).encode()
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, body = resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        with err:
            status, body = err.code, err.read().decode()
    try:
        return status, json.loads(body)
    except json.JSONDecodeError:
        return status, body
