"""Continuous batching (exitlaw.engine.decode.continuous): rows that join a running batch between rounds, and
rows that leave it (finished or evicted), each decode exactly what the single-sequence engine decodes for
that prompt, setting and seed alone -- tokens and block lengths -- for every method and verifier, at T = 0
and T > 0 with filters; a row's output does not depend on what else is in the batch."""

from __future__ import annotations

import pytest
import torch

from exitlaw.engine.decode.batch_generate import row_cache
from exitlaw.engine.decode.continuous import Row, RunningBatch, row_config
from exitlaw.engine.decode.dispatch import KINDS
from exitlaw.engine.decode.loop import DecodeConfig, generate
from exitlaw.theory.sampling_settings import SamplingSettings
from helpers.decode_configs import RAGGED_PROMPTS

PROMPTS = RAGGED_PROMPTS[:6]
LIMITS = [9, 4, 12, 6, 1, 10]
SEEDS = [0, 1, 2**63 - 1, 7, 12345, 3]
SETTINGS = {
    "T=0": SamplingSettings(0.0),
    "T=1": SamplingSettings(1.0),
    "T=0.7,top_k=20,top_p=0.9": SamplingSettings(0.7, top_k=20, top_p=0.9),
}


def _rows(cfg: DecodeConfig, which) -> list[Row]:
    return [
        Row(
            b,
            PROMPTS[b],
            row_config(cfg, seed=SEEDS[b], max_new_tokens=LIMITS[b], stop_tokens=(b + 40,)),
        )
        for b in which
    ]


def _run_joining(batch: RunningBatch, cfg: DecodeConfig, evict_key=None) -> dict:
    """Rows 0-2 join, two rounds, rows 3-5 join, then rounds until all finish (``evict_key`` leaves
    after the third round); returns each row by key."""
    seen = {}
    for row, _ in batch.admit(_rows(cfg, [0, 1, 2])):
        seen[row.key] = row
    for _ in range(2):
        batch.step()
    for row, _ in batch.admit(_rows(cfg, [3, 4, 5])):
        seen[row.key] = row
    rounds = 0
    while len(batch):
        batch.step()
        rounds += 1
        if rounds == 1 and evict_key is not None:
            assert [r.key for r in batch.evict([evict_key])] == [evict_key]
        assert rounds < 100
    return seen


def _alone(pair, row: Row):
    target, drafter = pair
    return generate(target, None if row.cfg.method == "ar" else drafter, row.prompt, row.cfg)


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize(
    "method,verifier", [("ar", "greedy"), ("chain", "tev")] + [("ddtree", k) for k in KINDS]
)
def test_every_row_decodes_what_it_decodes_alone(pair, method, verifier, setting):
    cfg = DecodeConfig(method=method, verifier=verifier, budget=12, settings=SETTINGS[setting])
    target, drafter = pair
    seen = _run_joining(RunningBatch(target, None if method == "ar" else drafter, cfg), cfg)
    assert sorted(seen) == list(range(len(PROMPTS)))
    for key, row in seen.items():
        alone = _alone(pair, row)
        assert row.done
        assert row.tokens == alone.tokens, f"row {key}"
        assert row.block_lengths == alone.block_lengths, f"row {key}"


def test_a_row_decodes_alike_in_any_batch_and_an_evicted_row_stops(pair):
    """The same seeded rows in another order, with one evicted after a round: the others unchanged."""
    target, drafter = pair
    cfg = DecodeConfig(
        method="ddtree", verifier="predraw", budget=12, settings=SamplingSettings(1.0)
    )
    full = _run_joining(RunningBatch(target, drafter, cfg), cfg)
    batch = RunningBatch(target, drafter, cfg)
    cut = _run_joining(batch, cfg, evict_key=2)
    assert not cut[2].done and cut[2].rounds < full[2].rounds
    assert cut[2].tokens == full[2].tokens[: len(cut[2].tokens)]
    for key in (0, 1, 3, 4, 5):
        assert cut[key].tokens == full[key].tokens
    # alone, one row after another: the same tokens again
    for key in (0, 3):
        single = RunningBatch(target, drafter, cfg)
        ((row, _),) = single.admit(_rows(cfg, [key]))
        while len(single):
            single.step()
        assert row.tokens == full[key].tokens


def test_spliced_rows_hold_the_kv_of_a_fresh_prefill(pair):
    """After joins and an eviction, each row's committed K/V equal a fresh prefill of its history."""
    target, drafter = pair
    cfg = DecodeConfig(method="ddtree", verifier="tev", budget=12, settings=SamplingSettings(1.0))
    batch = RunningBatch(target, drafter, cfg)
    batch.admit(_rows(cfg, [0, 2]))
    batch.step()
    batch.admit(_rows(cfg, [3, 5]))
    batch.step()
    batch.evict([2])
    batch.step()
    state = batch.state
    for b, row in enumerate(batch.rows):
        history = state.history[b]
        assert history[: len(row.prompt)] == row.prompt
        cache = target.new_cache()
        with torch.inference_mode():
            target.prefill(cache, torch.tensor(history[:-1]), all_logits=False)
        for (k, v), layer in zip(row_cache(state, b), cache.layers):
            torch.testing.assert_close(k, layer.keys[0], atol=1e-5, rtol=1e-4)
            torch.testing.assert_close(v, layer.values[0], atol=1e-5, rtol=1e-4)


def test_a_row_of_another_setting_is_refused_by_name(pair):
    target, drafter = pair
    cfg = DecodeConfig(method="ddtree", verifier="tev", budget=12, settings=SamplingSettings(1.0))
    other = DecodeConfig(method="ddtree", verifier="tev", budget=12, settings=SamplingSettings(0.5))
    with pytest.raises(ValueError, match="differs from this batch in settings"):
        RunningBatch(target, drafter, cfg).admit(_rows(other, [0]))


@pytest.mark.parametrize(
    "method,verifier", [("ar", "greedy"), ("ddtree", "predraw"), ("ddtree", "tev")]
)
def test_a_lone_row_runs_the_single_loop_and_hands_over_to_the_batch_and_back(
    pair, method, verifier
):
    """Row 2 alone for a round (the single-sequence round on the batch state), then rows 0, 1 and 3 join
    (batched rounds), then the others finish and the last left runs alone again: every row equals
    generate()."""
    target, drafter = pair
    cfg = DecodeConfig(method=method, verifier=verifier, budget=12, settings=SamplingSettings(1.0))
    batch = RunningBatch(target, None if method == "ar" else drafter, cfg)
    seen = {row.key: row for row, _ in batch.admit(_rows(cfg, [2]))}
    batch.step()
    assert seen[2].rounds == 1 and len(batch) == 1
    seen.update({row.key: row for row, _ in batch.admit(_rows(cfg, [0, 1, 3]))})
    sizes = []
    while len(batch):
        sizes.append(len(batch))
        batch.step()
    assert max(sizes) == 4 and sizes[-1] == 1  # batched rounds, then a lone row again
    for key, row in seen.items():
        assert row.tokens == _alone(pair, row).tokens, f"row {key}"
