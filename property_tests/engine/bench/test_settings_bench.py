"""The sampling-settings verifier bench (engine.bench.settings): every (kind, setting) is timed through
``verify`` with that setting on the same trees, and each ratio is to temperature-only of the same kind."""

import pytest

from exitlaw.cli import main
from exitlaw.engine.bench import settings as bench
from exitlaw.theory.sampling_settings import SamplingSettings
from helpers.cli_argv import cli_argv


def test_every_setting_reaches_verify_and_ratios_are_to_temperature_only(monkeypatch):
    seen = []
    real = bench.verify
    monkeypatch.setattr(
        bench,
        "verify",
        lambda kind, tree, logits, s, gens: (
            seen.append((kind, s)) or real(kind, tree, logits, s, gens)
        ),
    )
    res = bench.run_settings_bench(
        (6,),
        300,
        kinds=("tev", "residual"),
        trees=1,
        repeats=2,
        depth=3,
        sweep=({"top_k": 5}, {"top_p": 0.5, "min_p": 0.1}),
        temperature=0.8,
    )
    want = {
        SamplingSettings(0.8),
        SamplingSettings(0.8, top_k=5),
        SamplingSettings(0.8, top_p=0.5, min_p=0.1),
    }
    assert {s for k, s in seen if k == "tev"} == want == {s for k, s in seen if k == "residual"}
    rows = res["rows"]
    assert len(rows) == 2 * 3
    for r in rows:
        base = next(
            x for x in rows if x["kind"] == r["kind"] and x["setting"] == "temperature only"
        )
        assert r["ratio"] == pytest.approx(r["median_ms"] / base["median_ms"])
    assert "ratio" in res["text"] and "top_p=0.5,min_p=0.1" in res["text"]
    with pytest.raises(ValueError, match="temperature > 0"):
        bench.run_settings_bench((6,), 300, temperature=0.0)


def test_cli_sampling_sweep_prints_the_table(capsys):
    small = dict(budget=6, vocab=300, trees=1, repeats=1, depth=3, verifier="tev", threads=1)
    argv = cli_argv("bench", "verifiers", sampling_sweep=True, **small)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "temperature only" in out and "top_k=50,top_p=0.9,min_p=0.05" in out
