"""`exitlaw bench serve`'s arithmetic: latency quantiles as numpy's default, the median repeat of a cell
(with its own latencies), each mode's scaling against its lowest concurrency, and a table that prints
every cell of both batching modes side by side."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.simulate.audit.bench import _median_run, _quantile, _scaling, format_bench


@settings(max_examples=200, deadline=None)
@given(xs=st.lists(st.floats(0, 100), min_size=1, max_size=40), q=st.sampled_from([0.5, 0.95]))
def test_latency_quantiles_are_numpys_linear_quantiles(xs, q):
    assert abs(_quantile(xs, q) - float(np.quantile(xs, q))) <= 1e-9 * (1 + max(xs))


def _cell(tps, p50=0.1):
    return {"tokens_per_s": tps, "latency_p50_s": p50, "latency_p95_s": 2 * p50, "requests": 4}


def test_the_median_repeat_is_reported_with_its_own_latencies_and_every_rate_kept():
    runs = [_cell(30.0, 0.3), _cell(10.0, 0.1), _cell(20.0, 0.2)]
    med = _median_run(runs)
    assert med["tokens_per_s"] == 20.0 and med["latency_p50_s"] == 0.2
    assert med["tokens_per_s_runs"] == [30.0, 10.0, 20.0]
    assert _median_run(runs[:2])["tokens_per_s"] == 10.0  # even count: the lower middle


def _result():
    rows = []
    for method, rates in (("ar", (50.0, 150.0)), ("ddtree", (80.0, 200.0))):
        for mode, scale in (("continuous", 1.0), ("serial", 0.5)):
            for level, tps in zip((1, 8), rates):
                rows.append(
                    {"method": method, "batching": mode, "concurrency": level, **_cell(tps * scale)}
                )
    rows[0]["tokens_per_s"] = 50.0
    for r in rows:
        r["requests_per_s"] = r["tokens_per_s"] / 64
        continuous = r["batching"] == "continuous"
        r["rows_per_round"] = 0.9 * r["concurrency"] if continuous else None
    config = {
        "requests": 4,
        "max_tokens": 64,
        "temperature": 0.0,
        "budget": 32,
        "verifier": "tev",
        "max_batch": 16,
        "repeats": 3,
        "cpu_count": 2,
        "load_average": {"before": [1.0, 1, 1], "after": [2.0, 2, 2]},
    }
    audit = {
        "temperature": 1.0,
        "concurrency": 8,
        "wall_s": 3.0,
        "requests": 10,
        "samples_per_prompt_and_server": 100,
        "num_prompts": 2,
        "verdict": "no difference found",
    }
    return {"config": config, "rows": rows, "scaling": _scaling(rows), "audits": [audit]}


def test_scaling_is_each_modes_rate_over_its_lowest_level():
    scale = _result()["scaling"]
    assert scale["ar/continuous"] == {"1": 1.0, "8": 3.0}
    assert scale["ddtree/serial"] == {"1": 1.0, "8": 2.5}
    assert set(scale) == {"ar/continuous", "ar/serial", "ddtree/continuous", "ddtree/serial"}


def test_the_table_shows_both_modes_every_level_the_load_and_the_audit():
    text = format_bench(_result())
    lines = text.splitlines()
    cells = [line.split() for line in lines[2:10]]
    assert {(c[0], c[1], c[2]) for c in cells} == {
        (m, b, c) for m in ("ar", "ddtree") for b in ("continuous", "serial") for c in ("1", "8")
    }
    assert ["ar", "continuous", "8", "150.0", "3.00"] == cells[1][:5]
    # the occupancy column: a continuous level's mean rows per round, '-' for a serial server
    assert [c[-1] for c in cells if c[1] == "continuous"] == ["0.90", "7.20"] * 2
    assert {c[-1] for c in cells if c[1] == "serial"} == {"-"}
    assert lines[10].startswith("rows/rd:")
    assert (
        "median of 3 interleaved repeat(s)" in lines[0] and "load average 1.00 before" in lines[0]
    )
    assert "concurrency 8" in lines[-1] and "no difference found" in lines[-1]


def test_every_server_gets_the_device_dtype_and_threads(monkeypatch, tmp_path):
    """``--device`` / ``--dtype`` / ``--threads`` reach each of the four servers started (a GPU session
    benches the servers on CUDA); the start is stopped before anything runs."""
    from exitlaw.simulate.audit import bench

    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "x"}\n')
    started = []

    def fake_start(args, log):
        started.append(args)
        raise RuntimeError("not started in this test")

    monkeypatch.setattr(bench, "_start", fake_start)
    with pytest.raises(RuntimeError, match="not started"):
        bench.run_serve_bench(
            target="t",
            draft="d",
            prompts=str(prompts),
            concurrency=[1],
            requests=1,
            max_tokens=1,
            budget=4,
            verifier="tev",
            temperature=0.0,
            audit_temperatures=[0.0],
            audit_concurrency=1,
            max_batch=2,
            threads=2,
            device="cuda",
            dtype="bfloat16",
        )
    args = started[0]
    assert args[args.index("--device") + 1] == "cuda"
    assert args[args.index("--dtype") + 1] == "bfloat16"
    assert args[args.index("--threads") + 1] == "2"


class _FakeServer:
    """A client whose ``GET /stats`` answers the given bodies in turn and whose samples hold 3 tokens."""

    def __init__(self, *stats):
        self.stats = list(stats)

    def call(self, method, path, payload=None):
        assert (method, path) == ("GET", "/stats")
        return self.stats.pop(0)

    def sample(self, prompt, **kw):
        from types import SimpleNamespace

        return [SimpleNamespace(tokens=[1, 2, 3])]


def test_a_continuous_levels_occupancy_is_the_rows_its_rounds_decoded_over_its_rounds():
    from exitlaw.simulate.audit.bench import _level

    before = {
        "batching": "continuous",
        "rounds": 10,
        "row_rounds": 30,
        "round_sizes": {"2": 4, "4": 6},
    }
    after = {
        "batching": "continuous",
        "rounds": 25,
        "row_rounds": 75,
        "round_sizes": {"1": 3, "2": 4, "4": 18},
    }
    r = _level(_FakeServer(before, after), "m", ["x"], 2, 4, 3, 0.0)
    assert (r["rounds"], r["rows_per_round"], r["tokens"]) == (15, 3.0, 12)
    assert r["round_sizes"] == {
        "1": 3,
        "4": 12,
    }  # this level's rounds only, sizes it did not use left out
    serial = {"batching": "serial", "held": 0}
    r = _level(_FakeServer(serial, serial), "m", ["x"], 2, 4, 3, 0.0)
    assert r["rounds"] is None and r["rows_per_round"] is None and r["round_sizes"] is None
