"""``exitlaw bench serve``: aggregate tokens/s and per-request latency (p50, p95) of ``exitlaw serve`` (AR and
DDTree) per concurrency, with continuous batching and one request at a time side by side, and the wall time
and verdict of audits of DDTree against AR.

Four servers (AR and DDTree, each ``--batching continuous`` and ``serial``) are started on 127.0.0.1 (free
ports) as ``exitlaw serve`` processes and stopped with SIGTERM at the end; at each level ``c`` the same
``requests`` completions (prompts taken cyclically, each its own seed) go to each server in turn with ``c``
in flight, so the four are measured in one run on the same machine. A process, not an import: this module
loads neither torch nor JAX.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from exitlaw.simulate.audit.client import Client
from exitlaw.simulate.audit.plan import AuditConfig, read_prompts
from exitlaw.simulate.audit.run import run_audit
from exitlaw.theory.sampling_settings import SamplingSettings

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


def _quantile(xs: list[float], q: float) -> float:
    """The ``q`` quantile of ``xs`` (linear between order statistics, as numpy's default)."""
    xs = sorted(xs)
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _worker_counts(client: Client) -> tuple[int, int, dict[str, int]] | None:
    """A continuous server's ``(rounds, row_rounds, round_sizes)`` from ``GET /stats``; ``None`` for a
    serial one."""
    stats = client.call("GET", "/stats")
    if stats.get("batching") != "continuous":
        return None
    sizes = {str(k): int(v) for k, v in stats["round_sizes"].items()}
    return int(stats["rounds"]), int(stats["row_rounds"]), sizes


def _level(
    client: Client,
    model: str,
    prompts,
    level: int,
    requests: int,
    max_tokens: int,
    temperature: float,
):
    """``requests`` completions with ``level`` in flight: aggregate rates, per-request latency and, for a
    continuous server, its rounds, mean rows per round over the level (the batch's occupancy: the rows a
    round decodes, below ``level`` while requests join and as the last ones drain) and its rounds by the
    number of rows they decoded (``round_sizes``)."""

    def one(j):
        t0 = time.perf_counter()
        out = client.sample(
            prompts[j % len(prompts)],
            model=model,
            n=1,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=j,
            top_logprobs=None,
        )[0]
        return out, time.perf_counter() - t0

    before = _worker_counts(client)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=level) as pool:
        out = list(pool.map(one, range(requests)))
    wall = time.perf_counter() - t0
    after = _worker_counts(client)
    tokens = sum(len(s.tokens) for s, _ in out)
    latency = [dt for _, dt in out]
    rounds = row_rounds = sizes = None
    if before is not None and after is not None:
        rounds, row_rounds = after[0] - before[0], after[1] - before[1]
        sizes = {  # this level's rounds by the rows they decoded
            k: n - before[2].get(k, 0) for k, n in after[2].items() if n > before[2].get(k, 0)
        }
    return {
        "requests": requests,
        "tokens": tokens,
        "wall_s": wall,
        "requests_per_s": requests / wall,
        "tokens_per_s": tokens / wall,
        "latency_p50_s": _quantile(latency, 0.5),
        "latency_p95_s": _quantile(latency, 0.95),
        "rounds": rounds,
        "rows_per_round": row_rounds / rounds if rounds else None,
        "round_sizes": sizes,
    }


METHODS = ("ar", "ddtree")
MODES = ("continuous", "serial")


def _server_args(method, mode, *, target, draft, budget, verifier, max_batch, extra) -> list[str]:
    args = ["--target", target, "--batching", mode, "--max-batch", str(max_batch), *extra]
    if method == "ar":
        return [*args, "--method", "ar"]
    return [
        *args,
        "--draft",
        draft,
        "--method",
        "ddtree",
        "--budget",
        str(budget),
        "--verifier",
        verifier,
    ]


def _start_servers(procs: list, logs: Path, *, max_batch: int, **common) -> dict[tuple, str]:
    """Every (method, batching mode) server started, its process appended to ``procs`` as it starts (so
    the caller stops those started even when a later one fails); their URLs by ``(method, mode)``."""
    urls = {}
    for method in METHODS:
        for mode in MODES:
            args = _server_args(method, mode, max_batch=max_batch, **common)
            proc, urls[method, mode] = _start(args, logs / f"{method}-{mode}.log")
            procs.append(proc)
    return urls


def _stop_servers(procs: list) -> None:
    """SIGTERM to every server still running, then a kill to any not gone within 60 s."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()


def _timed_rows(clients, models, texts, concurrency, requests, max_tokens, temperature, repeats):
    """Per (method, mode, level), the median of ``repeats`` interleaved runs (each repeat measures every
    cell once, in the same order), after one warm-up request to each server; with the 1/5/15-minute load
    averages before and after the timed levels."""
    for k, c in clients.items():  # warm-up: one request each
        _level(c, models[k], texts, 1, 1, max_tokens, temperature)
    load_before = os.getloadavg()
    runs: dict[tuple, list[dict]] = {}
    for _ in range(repeats):  # interleaved: each repeat measures every cell once, in the same order
        for level in concurrency:
            for method in METHODS:
                for mode in MODES:
                    k = (method, mode)
                    r = _level(
                        clients[k], models[k], texts, level, requests, max_tokens, temperature
                    )
                    runs.setdefault((method, mode, level), []).append(r)
    load_after = os.getloadavg()
    rows = [
        {"method": m, "batching": b, "concurrency": c, **_median_run(rs)}
        for (m, b, c), rs in runs.items()
    ]
    return rows, load_before, load_after


def _audits(urls, prompts: str, audit_temperatures, audit_concurrency: int) -> list[dict]:
    """``exitlaw audit`` of the continuous DDTree server against the continuous AR one at each
    temperature: wall time, verdict and sample counts."""
    audits = []
    for t in audit_temperatures:
        t0 = time.perf_counter()
        report = run_audit(
            AuditConfig(
                candidate=urls["ddtree", "continuous"],
                reference=urls["ar", "continuous"],
                prompts=prompts,
                sampling=SamplingSettings(t),
                concurrency=(audit_concurrency,),
            )
        )
        audits.append(
            {
                "temperature": t,
                "concurrency": audit_concurrency,
                "wall_s": time.perf_counter() - t0,
                "verdict": report.verdict,
                "exit_code": report.exit_code,
                "requests": report.requests,
                "samples_per_prompt_and_server": report.samples,
                "num_prompts": report.num_prompts,
            }
        )
    return audits


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
    audit_temperatures,
    audit_concurrency: int,
    max_batch: int,
    threads: int | None,
    repeats: int = 1,
    device: str = "cpu",
    dtype: str = "auto",
) -> dict:
    """Every (method, batching mode) server started at once; per level, the same requests to each in turn;
    then ``exitlaw audit`` of the continuous DDTree server against the continuous AR one at each audit
    temperature, with ``audit_concurrency`` requests in flight."""
    texts = read_prompts(prompts)
    extra = ["--device", device, "--dtype", dtype] + (
        ["--threads", str(threads)] if threads else []
    )
    logs = Path(tempfile.mkdtemp(prefix="exitlaw-bench-serve-"))
    procs = []
    common = dict(target=target, draft=draft, budget=budget, verifier=verifier, extra=extra)
    try:
        urls = _start_servers(procs, logs, max_batch=max_batch, **common)
        clients = {k: Client("-".join(k), u) for k, u in urls.items()}
        models = {k: c.models()[0] for k, c in clients.items()}
        rows, load_before, load_after = _timed_rows(
            clients, models, texts, concurrency, requests, max_tokens, temperature, repeats
        )
        audits = _audits(urls, prompts, audit_temperatures, audit_concurrency)
    finally:
        _stop_servers(procs)
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
            "max_batch": max_batch,
            "threads": threads,
            "repeats": repeats,
            "device": device,
            "dtype": dtype,
            "cpu_count": os.cpu_count(),
            # 1/5/15-minute load averages before and after the timed levels (other work on the machine)
            "load_average": {"before": list(load_before), "after": list(load_after)},
        },
        "rows": rows,
        "scaling": _scaling(rows),
        "audits": audits,
    }


def _median_run(runs: list[dict]) -> dict:
    """Of a cell's repeats, the one with the median tokens/s (its own latencies), and every repeat's
    tokens/s."""
    ordered = sorted(runs, key=lambda r: r["tokens_per_s"])
    return {
        **ordered[(len(ordered) - 1) // 2],
        "tokens_per_s_runs": [r["tokens_per_s"] for r in runs],
    }


def _scaling(rows) -> dict:
    """Per method and mode: aggregate tokens/s at each level over that at the lowest level."""
    out = {}
    for method in METHODS:
        for mode in MODES:
            mine = sorted(
                (r["concurrency"], r["tokens_per_s"])
                for r in rows
                if r["method"] == method and r["batching"] == mode
            )
            if mine:
                base = mine[0][1]
                out[f"{method}/{mode}"] = {str(c): tps / base for c, tps in mine}
    return out


def format_bench(result: dict) -> str:
    c = result["config"]
    load = c["load_average"]
    lines = [
        f"exitlaw serve: {c['requests']} completions of up to {c['max_tokens']} tokens per level, T = "
        f"{c['temperature']:g}, DDTree budget {c['budget']} + {c['verifier']}, continuous batches of up "
        f"to {c['max_batch']} rows; median of {c['repeats']} interleaved repeat(s); servers on "
        f"{c.get('device', 'cpu')}; {c['cpu_count']} CPU(s), load average {load['before'][0]:.2f} before, {load['after'][0]:.2f} after",
        f"{'method':>7} {'batching':>11} {'c':>3} {'tok/s':>8} {'x c=lo':>7} {'req/s':>7} "
        f"{'p50 s':>7} {'p95 s':>7} {'rows/rd':>7}",
    ]
    scale = result["scaling"]
    for r in sorted(result["rows"], key=lambda r: (r["method"], r["batching"], r["concurrency"])):
        ratio = scale[f"{r['method']}/{r['batching']}"][str(r["concurrency"])]
        lines.append(
            f"{r['method']:>7} {r['batching']:>11} {r['concurrency']:>3} {r['tokens_per_s']:8.1f} "
            f"{ratio:7.2f} {r['requests_per_s']:7.2f} {r['latency_p50_s']:7.2f} {r['latency_p95_s']:7.2f} "
            + (f"{occ:7.2f}" if (occ := r.get("rows_per_round")) is not None else f"{'-':>7}")
        )
    lines.append(
        "rows/rd: a continuous server's mean rows per round over the level (its batch occupancy; "
        "'-': serial, one request at a time)"
    )
    for au in result["audits"]:
        lines.append(
            f"audit DDTree vs AR (both continuous) at T = {au['temperature']:g}, concurrency "
            f"{au['concurrency']}: {au['wall_s']:.1f} s wall, {au['requests']} requests, "
            f"{au['samples_per_prompt_and_server']} samples per prompt and server, {au['num_prompts']} "
            f"prompt(s); verdict {au['verdict']}"
        )
    return "\n".join(lines)


__all__ = ["run_serve_bench", "format_bench"]
