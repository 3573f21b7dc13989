"""ExitTrain under sampling settings: the scoring law's edges are the processed target's
(theory.sampling_settings), continuations are drawn from the processed target (top-k = 1 at T = 1 is
greedy), the settings reach the cache key, the server request and the config, and bad ones are named."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from exitlaw.cli import main
from exitlaw.engine.builders.single import build_ddtree
from exitlaw.engine.training.batch import edge_probabilities, make_batch, score_trees, scoring_table
from exitlaw.engine.training.config import TrainConfig
from exitlaw.engine.training.continuation_server import server_continuations
from exitlaw.engine.training.data import cached_sequences, generate_continuations
from exitlaw.engine.training.law import TreeBatch, tree_law
from exitlaw.theory import DistributionError, gather_edge_probs, reference_law
from exitlaw.theory.sampling_settings import HF_ORDER, SamplingSettings, process_logits
from helpers.cli_argv import train_argv


@pytest.mark.parametrize(
    "settings",
    [
        SamplingSettings(0.5),
        SamplingSettings(0.5, top_k=3),
        SamplingSettings(1.0, top_p=0.7),
        SamplingSettings(1.5, min_p=0.2),
        SamplingSettings(0.8, top_k=5, top_p=0.8, min_p=0.05, order=HF_ORDER),
    ],
)
def test_scoring_edges_and_exit_law_are_the_processed_targets(settings):
    rng = np.random.default_rng(3)
    draft = torch.log_softmax(torch.tensor(rng.normal(0, 2, size=(4, 12))), -1)
    tree, _ = build_ddtree(draft, 10, root_token=1)
    logits = torch.tensor(rng.normal(0, 2, size=(tree.num_nodes, 12)), dtype=torch.float32)
    edges = edge_probabilities(tree, scoring_table(logits, settings))
    rows = process_logits(logits.double().numpy(), settings)
    np.testing.assert_allclose(edges, gather_edge_probs(tree, rows), rtol=1e-5, atol=1e-7)
    law = tree_law(
        TreeBatch.from_trees([tree], "cpu", tree.num_nodes), torch.as_tensor(edges)[None]
    )
    ref = reference_law(tree, rows.tolist(), one=1.0)
    np.testing.assert_allclose(law.w[0].numpy(), ref.w, atol=1e-6)
    if settings.filtered:  # the filters change the law (a dropped setting would be seen)
        plain = edge_probabilities(tree, logits / settings.temperature)
        assert not np.allclose(edges, plain, atol=1e-4)


def test_train_config_carries_the_scoring_settings_and_names_bad_ones():
    cfg = TrainConfig(scoring=SamplingSettings(0.7, top_k=4, min_p=0.1, order=HF_ORDER))
    assert cfg.scoring == SamplingSettings(0.7, top_k=4, min_p=0.1, order=HF_ORDER)
    saved = json.loads(json.dumps(cfg.to_saved()))  # config.json's record reads back whole
    assert TrainConfig.from_saved(saved) == cfg
    assert TrainConfig.from_saved({"objective": "exit"}).scoring == SamplingSettings(
        1.0
    )  # old runs
    old = {"target_temperature": 0.7, "target_top_k": 4, "target_min_p": 0.1}
    assert TrainConfig.from_saved({**old, "target_sampling_order": "hf"}) == cfg  # flat records
    with pytest.raises(DistributionError, match="top_p"):
        TrainConfig.from_saved({"scoring": {"temperature": 1.0, "top_p": 0.0}})
    with pytest.raises(ValueError, match="vllm or hf"):
        TrainConfig.from_saved({"target_sampling_order": "sglang"})
    with pytest.raises(ValueError, match="draft-opd"):
        TrainConfig(objective="draft-opd", scoring=SamplingSettings(1.0, top_k=5))
    with pytest.raises(ValueError, match="scoring temperature > 0"):
        TrainConfig(scoring=SamplingSettings(0.0))


TINY_SEED = 1


def test_continuations_under_top_k_1_at_T1_are_greedy(pair):
    target, _ = pair
    prompts = [[11, 42, 7], [5, 6]]
    greedy = generate_continuations(
        target, prompts, max_new_tokens=8, settings=SamplingSettings(0.0), seed=0
    )
    plain = generate_continuations(
        target, prompts, max_new_tokens=8, settings=SamplingSettings(1.0), seed=0
    )
    assert plain != greedy
    assert (
        generate_continuations(
            target, prompts, max_new_tokens=8, settings=SamplingSettings(1.0, top_k=1), seed=0
        )
        == greedy
    )


def test_the_training_entry_points_refuse_a_bare_float_naming_it(tmp_path):
    # the settings are typed: a float temperature is a TypeError naming what came, before any work
    bare = "expected SamplingSettings, got float 0.5"
    with pytest.raises(TypeError, match=bare):
        generate_continuations(None, [[1]], max_new_tokens=2, settings=0.5, seed=0)
    with pytest.raises(TypeError, match=bare):
        cached_sequences(None, "fp", [[1]], tmp_path, max_new_tokens=2, settings=0.5, seed=0)
    with pytest.raises(TypeError, match=bare):
        score_trees(None, None, torch.zeros(3, 4), torch.tensor([1]), [], 0.5)
    with pytest.raises(TypeError, match=bare):
        make_batch(None, None, [], 1, 4, np.random.default_rng(0), settings=0.5)
    with pytest.raises(TypeError, match=bare):
        server_continuations(
            "http://x", [[1]], None, model="m", max_new_tokens=2, settings=0.5, seed=0
        )
    assert not list(tmp_path.iterdir())  # nothing cached


def test_filters_reach_the_cache_key_and_the_server_request(tmp_path, monkeypatch):
    def gen(prompts):
        return [[1, 2]] * len(prompts)

    kw = dict(max_new_tokens=4, seed=0, generate=gen, source="s")
    cached_sequences(None, "fp", [[3]], tmp_path / "a", settings=SamplingSettings(1.0), **kw)
    cached_sequences(
        None,
        "fp",
        [[3]],
        tmp_path / "a",
        settings=SamplingSettings(1.0, top_p=1.0, min_p=0.0),
        **kw,
    )  # inactive
    assert len(list((tmp_path / "a").iterdir())) == 1
    cached_sequences(
        None, "fp", [[3]], tmp_path / "a", settings=SamplingSettings(1.0, top_k=5), **kw
    )
    files = sorted((tmp_path / "a").iterdir())
    assert len(files) == 2
    heads = [json.loads(f.read_text().splitlines()[0]) for f in files]
    assert sorted(h.get("filters", {}).get("top_k") for h in heads if "filters" in h) == [5]

    sent = []
    from exitlaw.engine.training import continuation_server as cs

    monkeypatch.setattr(
        cs, "_post", lambda url, body, timeout: sent.append(body) or {"choices": [{"text": "ab"}]}
    )

    def tok(text, add_special_tokens=False):
        return {"input_ids": [ord(c) for c in text]}

    def ask(settings):
        """Two tokens for the one-token prompt [1] from the fake server, sampled under ``settings``."""
        return server_continuations(
            "http://x", [[1]], tok, model="m", max_new_tokens=2, settings=settings, seed=0
        )

    ask(SamplingSettings(0.8, top_k=7, min_p=0.1))
    assert sent[-1]["top_k"] == 7 and sent[-1]["min_p"] == 0.1 and "top_p" not in sent[-1]
    with pytest.raises(ValueError, match="own filter order"):
        ask(SamplingSettings(0.8, top_p=0.9, min_p=0.1, order=HF_ORDER))


def test_train_flags_reach_the_scoring_law_and_the_continuations(monkeypatch, tmp_path):
    from exitlaw.engine.training import run as training_run

    calls = []
    monkeypatch.setattr(
        training_run,
        "run_training",
        lambda spec, data=None: calls.append(spec) or {"final_drafter": "F", "last": {}, "rank": 0},
    )
    scoring = dict(top_k=20, top_p=0.9, sampling_order="hf", scoring_temperature=0.5)
    argv = train_argv("t", "d", "p.jsonl", out=tmp_path / "o", **scoring, gen_temperature=0.8)
    assert main(argv) == 0
    spec = calls[-1]
    assert spec.config.scoring == SamplingSettings(0.5, top_k=20, top_p=0.9, order=HF_ORDER)
    assert spec.generation == SamplingSettings(0.8, 20, 0.9, None, HF_ORDER)
    with pytest.raises(SystemExit):
        main(train_argv("t", "d", "p", out=tmp_path / "x", min_p=1))
