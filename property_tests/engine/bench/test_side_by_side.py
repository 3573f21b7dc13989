"""The project side of ``exitlaw bench ddtree`` without DDTree: the paired ratio interval, the weight
identity check, the transformers-4 ``crop`` shim, the clone/dependency errors, and a whole run against a
fake reference (exitlaw itself behind DDTree's output format; then one that emits wrong tokens)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from transformers import DynamicCache

from exitlaw.engine.bench.ddtree_reference import (
    ReferenceError,
    _check_dependencies,
    check_same_weights,
    crop_to_length,
    legacy_crop_cache_class,
    load_reference,
    weight_differences,
)
from exitlaw.engine.bench.side_by_side import (
    SideBySideConfig,
    format_side_by_side,
    paired_ratio,
    run_side_by_side,
)
from exitlaw.engine.decode.loop import DecodeConfig, generate
from exitlaw.theory.sampling_settings import SamplingSettings

TINY_SEED = 1


def test_paired_ratio_is_the_t_interval_of_log_ratios():
    ours, theirs = [110.0, 120.0, 100.0], [100.0, 100.0, 100.0]
    r = paired_ratio(ours, theirs)
    logs = np.log([1.1, 1.2, 1.0])
    half = 4.302652729911275 * logs.std(ddof=1) / math.sqrt(3)  # t_{0.975, 2}
    assert r["centre"] == pytest.approx(math.exp(logs.mean()))
    assert r["lo"] == pytest.approx(math.exp(logs.mean() - half), rel=1e-6)
    assert r["hi"] == pytest.approx(math.exp(logs.mean() + half), rel=1e-6)
    assert (r["median"], r["min"], r["max"]) == pytest.approx((1.1, 1.0, 1.2))
    # paired: a common per-repetition factor (load drift) cancels
    drift = paired_ratio([200.0, 50.0, 120.0], [100.0, 25.0, 60.0])
    assert drift["lo"] == pytest.approx(2.0) and drift["hi"] == pytest.approx(2.0)
    with pytest.raises(ValueError, match=">= 2"):
        paired_ratio([1.0], [1.0])
    with pytest.raises(ValueError, match="positive"):
        paired_ratio([1.0, 0.0], [1.0, 1.0])


def test_weight_differences_name_every_mismatch():
    a = {"w": torch.ones(2, 2), "b": torch.zeros(3)}
    assert weight_differences(a, {k: v.clone() for k, v in a.items()}) == []
    flipped = a["w"].clone()
    flipped.view(torch.int32)[0, 0] ^= 1  # one bit
    probs = weight_differences(a, {"w": flipped, "c": torch.zeros(1)})
    assert probs == ["only in exitlaw: b", "only in the reference: c", "w: values differ"]
    assert weight_differences({"w": torch.ones(2)}, {"w": torch.ones(2, dtype=torch.float64)})[
        0
    ].startswith("w: (2,)")


def test_same_weights_check_passes_for_one_pair_and_fails_for_a_changed_tensor(pair):
    target, drafter = pair
    import copy

    ref_target, ref_drafter = copy.deepcopy(target.model), copy.deepcopy(drafter)
    counts = check_same_weights(target, drafter, ref_target, ref_drafter)
    assert counts["target"] > 0 and counts["drafter"] > 0
    with torch.no_grad():
        next(ref_drafter.parameters()).view(-1)[0] += 1e-7
    with pytest.raises(ReferenceError, match="drafter .*values differ"):
        check_same_weights(target, drafter, ref_target, ref_drafter)


def test_crop_shim_keeps_the_first_max_length_positions():
    cache = legacy_crop_cache_class()()
    cache.update(torch.arange(10.0).view(1, 1, 10, 1), torch.arange(10.0).view(1, 1, 10, 1), 0)
    cache.crop(12)  # longer than the cache: nothing happens (transformers 4)
    assert cache.get_seq_length() == 10
    cache.crop(7)
    assert cache.get_seq_length() == 7 and cache.layers[0].keys.flatten().tolist() == list(range(7))
    cache.crop(-2)  # transformers 4: a negative length drops that many from the end
    assert cache.get_seq_length() == 5
    plain = DynamicCache()
    plain.update(torch.zeros(1, 1, 4, 1), torch.zeros(1, 1, 4, 1), 0)
    crop_to_length(plain, 1)
    assert plain.get_seq_length() == 1


def test_bad_clone_and_missing_dependencies_are_named(tmp_path):
    with pytest.raises(
        ReferenceError, match="not a clone of liranringel/ddtree: missing ddtree.py"
    ):
        load_reference(tmp_path)

    def importer(name):
        if name == "loguru":
            raise ImportError(name)

    with pytest.raises(ReferenceError, match="needs loguru .*pip install loguru"):
        _check_dependencies(importer)


class FakeReference:
    """exitlaw's own engine behind DDTree's output format (``wrong`` shifts every T = 0 token by one)."""

    def __init__(self, target, drafter, wrong=False):
        self.target, self.drafter, self.wrong = target, drafter, wrong

    def generate(self, prompt, *, method, budget, max_new_tokens, temperature):
        cfg = DecodeConfig(
            method=method,
            verifier="predraw",
            budget=budget,
            settings=SamplingSettings(temperature),
            max_new_tokens=max_new_tokens,
            seed=int(torch.initial_seed()) % 1000,
        )
        res = generate(self.target, self.drafter, prompt, cfg)
        toks = [(t + 1) % 50 if self.wrong and method != "ar" else t for t in res.tokens]
        return SimpleNamespace(
            output_ids=torch.tensor([list(prompt) + toks]),
            num_input_tokens=len(prompt),
            decode_rounds=len(res.block_lengths),
            stage_times={k: v["total_s"] for k, v in res.stages.items()},
        )


def test_side_by_side_run_reports_ratios_exactness_and_stages(pair):
    target, drafter = pair
    cfg = SideBySideConfig(budgets=(4,), max_new_tokens=5, repeats=2, hot_budget=4)
    prompts = [[5, 9, 13, 2], [7, 1, 30]]
    res = run_side_by_side(target, drafter, FakeReference(target, drafter), prompts, cfg)
    names = [(r["name"], r["temperature"]) for r in res["results"]]
    assert names == [("ar", 0.0), ("chain", 0.0), ("ddtree B=4", 0.0), ("ddtree B=4", 1.0)]
    for r in res["results"][1:3]:
        assert r["exact"] == {
            "exitlaw greedy": True,
            "ddtree": True,
            "deterministic_over_repetitions": True,
        }
        ratio = r["engines"]["exitlaw greedy"]["ratio_tokens_per_s"]
        assert ratio["lo"] <= ratio["centre"] <= ratio["hi"] and ratio["repeats"] == 2
    hot = res["results"][3]["engines"]
    assert set(hot) == {"exitlaw tev", "exitlaw predraw", "ddtree"}
    assert "ratio_round_speed" in hot["exitlaw tev"] and hot["ddtree"]["tau"] >= 1.0
    assert res["results"][0]["exact"]["ar_outputs_agree"] is True
    assert "tokens/s exitlaw/DDTree" in format_side_by_side(res)
    bad = run_side_by_side(
        target,
        drafter,
        FakeReference(target, drafter, wrong=True),
        prompts[:1],
        SideBySideConfig(budgets=(4,), max_new_tokens=5, repeats=2, temperatures=(0.0,)),
    )
    assert (
        bad["results"][1]["exact"]["ddtree"] is False
        and bad["results"][1]["exact"]["exitlaw greedy"] is True
    )


def test_config_rejects_what_the_interval_cannot_use():
    with pytest.raises(ValueError, match="repeats"):
        SideBySideConfig(repeats=1)
    with pytest.raises(ValueError, match="temperatures"):
        SideBySideConfig(temperatures=(0.5,))
