"""``exitlaw bench serve``: requests/s and tokens/s of ``exitlaw serve`` (AR and DDTree) per concurrency,
and the wall time of an audit of the one against the other.

Both servers are started on 127.0.0.1 (free ports) as ``exitlaw serve`` processes and stopped with SIGTERM
at the end; at each level ``c`` the same ``requests`` completions (prompts taken cyclically, each its own
seed) go to AR and then to DDTree with ``c`` in flight. A process, not an import: this module loads neither
torch nor JAX.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from exitlaw.theory.sampling_settings import SamplingSettings

from exitlaw.simulate.audit.client import Client
from exitlaw.simulate.audit.plan import AuditConfig, read_prompts

_READY = re.compile(r"ready on (http://127\.0\.0\.1:\d+)")


def _start(args: list[str], log: Path) -> tuple[subprocess.Popen, str]:
    with log.open("w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "exitlaw", "serve", "--port", "0", *args],
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 600
    while True:
        m = _READY.search(log.read_text(errors="replace"))
        if m:
            return proc, m.group(1)
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(
                f"exitlaw serve {' '.join(args)} did not start:\n{log.read_text()[-2000:]}"
            )
        time.sleep(0.2)


def _level(
    client: Client,
    model: str,
    prompts,
    level: int,
    requests: int,
    max_tokens: int,
    temperature: float,
):
    def one(j):
        return client.sample(
            prompts[j % len(prompts)],
            model=model,
            n=1,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=j,
            top_logprobs=None,
        )[0]

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=level) as pool:
        out = list(pool.map(one, range(requests)))
    wall = time.perf_counter() - t0
    tokens = sum(len(s.tokens) for s in out)
    return {
        "requests": requests,
        "tokens": tokens,
        "wall_s": wall,
        "requests_per_s": requests / wall,
        "tokens_per_s": tokens / wall,
    }


def run_serve_bench(
    *,
    target: str,
    draft: str,
    prompts: str,
    concurrency,
    requests: int,
    max_tokens: int,
    budget: int,
    verifier: str,
    temperature: float,
    audit_temperature: float,
    threads: int | None,
) -> dict:
    from exitlaw.simulate.audit.run import run_audit

    texts = read_prompts(prompts)
    extra = ["--threads", str(threads)] if threads else []
    logs = Path(tempfile.mkdtemp(prefix="exitlaw-bench-serve-"))
    procs = []
    try:
        ar, ar_url = _start(["--target", target, "--method", "ar", *extra], logs / "ar.log")
        procs.append(ar)
        dd, dd_url = _start(
            [
                "--target",
                target,
                "--draft",
                draft,
                "--method",
                "ddtree",
                "--budget",
                str(budget),
                "--verifier",
                verifier,
                *extra,
            ],
            logs / "ddtree.log",
        )
        procs.append(dd)
        clients = {"ar": Client("ar", ar_url), "ddtree": Client("ddtree", dd_url)}
        models = {k: c.models()[0] for k, c in clients.items()}
        for k, c in clients.items():  # warm-up: one request each
            _level(c, models[k], texts, 1, 1, max_tokens, temperature)
        rows = []
        for level in concurrency:
            for k in ("ar", "ddtree"):
                r = _level(clients[k], models[k], texts, level, requests, max_tokens, temperature)
                rows.append({"method": k, "concurrency": level, **r})
        t0 = time.perf_counter()
        report = run_audit(
            AuditConfig(
                candidate=dd_url,
                reference=ar_url,
                prompts=prompts,
                sampling=SamplingSettings(audit_temperature),
                concurrency=(1,),
            )
        )
        audit = {
            "temperature": audit_temperature,
            "wall_s": time.perf_counter() - t0,
            "verdict": report.verdict,
            "requests": report.requests,
            "samples_per_prompt_and_server": report.samples,
            "num_prompts": report.num_prompts,
        }
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
    return {
        "config": {
            "target": target,
            "draft": draft,
            "prompts": prompts,
            "requests": requests,
            "max_tokens": max_tokens,
            "budget": budget,
            "verifier": verifier,
            "temperature": temperature,
            "threads": threads,
        },
        "rows": rows,
        "audit": audit,
    }


def format_bench(result: dict) -> str:
    c = result["config"]
    lines = [
        f"exitlaw serve: {c['requests']} completions of up to {c['max_tokens']} tokens per level, T = "
        f"{c['temperature']:g}, DDTree budget {c['budget']} + {c['verifier']}",
        f"{'c':>3} {'AR req/s':>9} {'AR tok/s':>9} {'DDTree req/s':>13} {'DDTree tok/s':>13} {'DDTree/AR':>10}",
    ]
    by = {(r["method"], r["concurrency"]): r for r in result["rows"]}
    for level in sorted({r["concurrency"] for r in result["rows"]}):
        a, d = by[("ar", level)], by[("ddtree", level)]
        lines.append(
            f"{level:>3} {a['requests_per_s']:9.2f} {a['tokens_per_s']:9.1f} {d['requests_per_s']:13.2f} "
            f"{d['tokens_per_s']:13.1f} {d['tokens_per_s'] / a['tokens_per_s']:10.2f}"
        )
    au = result["audit"]
    lines.append(
        f"audit DDTree vs AR at T = {au['temperature']:g}: {au['wall_s']:.1f} s wall, {au['requests']} requests, "
        f"{au['samples_per_prompt_and_server']} samples per prompt and server, {au['num_prompts']} prompt(s); "
        f"verdict {au['verdict']}"
    )
    return "\n".join(lines)


__all__ = ["run_serve_bench", "format_bench"]
