"""guidellm and aiperf against ``exitlaw serve`` with no shim (issue 51): AR and DDTree + TEV on the mini pair,
loopback, each tool at concurrency 1 and 8, their TTFT and inter-token latency, and the server's ``GET /stats``
(the change over each tool run) beside them.

    GUIDELLM=PATH AIPERF=PATH python paper_repro/results/serve_bench/field_tools/run_field_tools.py DIR
    python paper_repro/results/serve_bench/field_tools/run_field_tools.py DIR --render

The design is fixed in :class:`Design` (the shipped runs' settings), so a record says exactly what ran; the
tools' executables come from ``GUIDELLM`` / ``AIPERF`` (default: the ones on ``PATH``). The script parses no
options (the command line lives in ``exitlaw/cli``): ``DIR`` and an optional ``--render``, which only
rewrites ``results.md`` from ``results.json``.

The tools are dev tools, not dependencies of exitlaw: install them where they do not disturb the project's
environment (``python -m venv V && V/bin/pip install guidellm aiperf``) and name their executables. Both
send what they send to vLLM: streamed completions with ``ignore_eos: true`` and ``max_tokens`` (guidellm
also ``stream_options.continuous_usage_stats`` and ``stop: null``; aiperf ``--extra-inputs
ignore_eos:true``, its own advice for fixed output lengths), so every reply has exactly the output tokens
asked. Every run is bounded (a request count and a timeout).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

BASE = Path("paper_repro/results/paper_regime/base")
READY = re.compile(r"ready on (http://127\.0\.0\.1:(\d+))")
METHODS = {
    "ar": ["--method", "ar"],
    "ddtree": ["--draft", str(BASE / "drafter_base" / "final"), "--method", "ddtree"],
}


def start_server(method: str, threads: int, log: Path) -> tuple[subprocess.Popen, str]:
    args = [sys.executable, "-m", "exitlaw", "serve", "--target", str(BASE / "target")]
    args += [*METHODS[method], "--port", "0", "--threads", str(threads)]
    fh = log.open("w")
    proc = subprocess.Popen(args, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        m = READY.search(log.read_text())
        if m:
            return proc, m.group(1)
        if proc.poll() is not None:
            raise RuntimeError(f"exitlaw serve exited:\n{log.read_text()[-2000:]}")
        time.sleep(0.5)
    proc.terminate()
    raise RuntimeError("exitlaw serve was not ready in 300 s")


def stats(url: str) -> dict:
    with urllib.request.urlopen(url + "/stats", timeout=30) as resp:
        return json.loads(resp.read())


def stats_change(before: dict, after: dict) -> dict:
    """What the server did during one tool run: counts over it, and rows per round."""
    keys = ("rounds", "row_rounds", "admitted", "finished", "cancelled")
    out = {k: after[k] - before[k] for k in keys}
    sizes = {
        k: v - before["round_sizes"].get(k, 0)
        for k, v in after["round_sizes"].items()
        if v - before["round_sizes"].get(k, 0)
    }
    out["round_sizes"] = sizes
    out["rows_per_round"] = out["row_rounds"] / out["rounds"] if out["rounds"] else None
    out["largest_batch_so_far"] = after["largest_batch"]
    return out


def run_guidellm(exe, url, c, n, prompt_tokens, output_tokens, outdir: Path) -> dict:
    path = outdir / "guidellm.json"
    cmd = [
        exe,
        "run",
        "--backend",
        f"kind=openai_http,target={url},request_format=/v1/completions",
        "--profile",
        f"kind=concurrent,streams={c}",
        "--constraint",
        f"kind=max_requests,count={n}",
        "--data",
        f"kind=synthetic_text,prompt_tokens={prompt_tokens},output_tokens={output_tokens}",
        "--tokenizer",
        f"kind=hf_auto,model={BASE / 'target'}",
        "--output",
        f"kind=json,path={path}",
        "--disable-console-interactive",
    ]
    with (outdir / "guidellm.log").open("w") as log:
        subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=900, check=True)
    bench = json.loads(path.read_text())["benchmarks"][0]
    m = bench["metrics"]

    def dist(name):
        s = m[name]["successful"]
        p = s["percentiles"]
        return {
            "mean": s["mean"],
            "p50": p["p50"],
            "p95": p["p95"],
            "p99": p["p99"],
            "n": s["count"],
        }

    req = bench["requests"]
    return {
        "ttft_ms": dist("time_to_first_token_ms"),
        "itl_ms": dist("inter_token_latency_ms"),
        "output_tokens_per_request": dist("output_token_count"),
        "output_tokens_per_s": m["output_tokens_per_second"]["successful"]["mean"],
        "successful": len(req.get("successful") or []),
        "errored": len(req.get("errored") or []),
        "command": " ".join(cmd),
    }


def run_aiperf(exe, url, c, n, prompt_tokens, output_tokens, outdir: Path) -> dict:
    cmd = [
        exe,
        "profile",
        "--model",
        "target",
        "--url",
        url,
        "--endpoint-type",
        "completions",
        "--streaming",
        "--concurrency",
        str(c),
        "--request-count",
        str(n),
        "--synthetic-input-tokens-mean",
        str(prompt_tokens),
        "--synthetic-input-tokens-stddev",
        "0",
        "--output-tokens-mean",
        str(output_tokens),
        "--output-tokens-stddev",
        "0",
        "--extra-inputs",
        "ignore_eos:true",
        "--tokenizer",
        str(BASE / "target"),
        "--use-server-token-count",
        "--artifact-dir",
        str(outdir / "aiperf"),
        "--no-server-metrics",
        "--no-gpu-telemetry",
        "--ui-type",
        "simple",
    ]
    env = {
        k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    }
    with (outdir / "aiperf.log").open("w") as log:
        subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=900, check=True, env=env)
    d = json.loads((outdir / "aiperf" / "profile_export_aiperf.json").read_text())

    def dist(name):
        s = d[name]
        return {
            "mean": s["avg"],
            "p50": s["p50"],
            "p95": s["p95"],
            "p99": s["p99"],
            "n": s["count"],
        }

    errors = d.get("error_summary") or []
    return {
        "ttft_ms": dist("time_to_first_token"),
        "itl_ms": dist("inter_token_latency"),
        "output_tokens_per_request": dist("output_sequence_length"),
        "output_tokens_per_s": d["output_token_throughput"]["avg"],
        "successful": d["request_count"]["avg"],
        "errored": sum(e.get("count", 0) for e in errors) if isinstance(errors, list) else errors,
        "command": " ".join(cmd),
    }


TOOLS = {"guidellm": run_guidellm, "aiperf": run_aiperf}


def table(rows: list[dict], key: str, title: str) -> str:
    out = [
        f"**{title}** (ms)",
        "",
        "| tool | method | c | mean | p50 | p95 | p99 | requests (errors) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        d = r[key]
        out.append(
            f"| {r['tool']} | {r['method']} | {r['concurrency']} | {d['mean']:.2f} | {d['p50']:.2f} | "
            f"{d['p95']:.2f} | {d['p99']:.2f} | {int(r['successful'])} ({int(r['errored'])}) |"
        )
    return "\n".join(out)


@dataclass(frozen=True)
class Design:
    """The runs' fixed design: servers, concurrency levels, requests per stream (``c x requests`` in
    all), prompt and output tokens, server threads."""

    methods: tuple[str, ...] = ("ar", "ddtree")
    concurrency: tuple[int, ...] = (1, 8)
    requests: int = 8
    prompt_tokens: int = 128
    output_tokens: int = 64
    threads: int = 1


USAGE = "usage: run_field_tools.py DIR [--render]"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    render_only = "--render" in argv
    rest = [a for a in argv if a != "--render"]
    if len(rest) != 1 or rest[0].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    out, design = Path(rest[0]), Design()
    if render_only:
        saved = json.loads((out / "results.json").read_text())
        render(out, saved["rows"], saved["args"]["output_tokens"])
        return 0
    exes = {
        "guidellm": os.environ.get("GUIDELLM") or shutil.which("guidellm"),
        "aiperf": os.environ.get("AIPERF") or shutil.which("aiperf"),
    }
    for name, exe in exes.items():
        if not exe or not Path(exe).exists():
            print(f"{name}: no executable (install it in a venv of its own, set {name.upper()})")
            return 2
    args = _Args(out=out, guidellm=exes["guidellm"], aiperf=exes["aiperf"], **asdict(design))
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for method in args.methods:
        proc, url = start_server(method, args.threads, args.out / f"server_{method}.log")
        try:
            for tool, run in TOOLS.items():
                for c in args.concurrency:
                    outdir = args.out / method / f"{tool}_c{c}"
                    outdir.mkdir(parents=True, exist_ok=True)
                    load = os.getloadavg()
                    before = stats(url)
                    t0 = time.monotonic()
                    res = run(
                        exes[tool], url, c, c * args.requests, args.prompt_tokens,
                        args.output_tokens, outdir,
                    )  # fmt: skip
                    took = time.monotonic() - t0
                    after = stats(url)
                    row = {
                        "tool": tool,
                        "method": method,
                        "concurrency": c,
                        **res,
                        "wall_s": took,
                        "load_before": load,
                        "load_after": os.getloadavg(),
                        "server_stats_change": stats_change(before, after),
                        "server_stats_after": after,
                    }
                    (outdir / "row.json").write_text(json.dumps(row, indent=1))
                    rows.append(row)
                    print(
                        f"{tool} {method} c={c}: TTFT p50 {res['ttft_ms']['p50']:.1f} ms, "
                        f"ITL p50 {res['itl_ms']['p50']:.2f} ms, {res['successful']} ok, "
                        f"{res['errored']} errors, load {load[0]:.2f}",
                        flush=True,
                    )
        finally:
            proc.terminate()
            proc.wait(120)
    (args.out / "results.json").write_text(
        json.dumps({"rows": rows, "args": asdict(args)}, indent=1, default=str)
    )
    render(args.out, rows, args.output_tokens)
    return 0


@dataclass(frozen=True)
class _Args(Design):
    """One run: the design, where it writes, and the tools it runs (recorded in ``results.json``)."""

    out: Path = Path(".")
    guidellm: str = ""
    aiperf: str = ""


def render(out: Path, rows: list[dict], output_tokens: int) -> None:
    """``results.md``: the two latency tables and the server's counts over each run. Tokens per round:
    the tokens the rounds committed (every reply has ``output_tokens``, the first from the prefill)
    over the rows they decoded."""
    stats_rows = [
        "| tool | method | c | rounds | rows per round | tokens per row-round | admitted | finished "
        "| cancelled | load (1 min) before / after |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s = r["server_stats_change"]
        rpr = "-" if s["rows_per_round"] is None else f"{s['rows_per_round']:.2f}"
        tau = s["finished"] * (output_tokens - 1) / s["row_rounds"] if s["row_rounds"] else None
        stats_rows.append(
            f"| {r['tool']} | {r['method']} | {r['concurrency']} | {s['rounds']} | {rpr} | "
            f"{'-' if tau is None else f'{tau:.2f}'} | {s['admitted']} | {s['finished']} | "
            f"{s['cancelled']} | {r['load_before'][0]:.2f} / {r['load_after'][0]:.2f} |"
        )
    text = "\n\n".join(
        [
            table(rows, "ttft_ms", "Time to first token"),
            table(rows, "itl_ms", "Inter-token latency"),
            "**The server's `GET /stats` over each run**\n\n" + "\n".join(stats_rows),
        ]
    )
    (out / "results.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
