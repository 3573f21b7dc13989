"""Tree scoring over only the last N context tokens (the authors' code), and the scoring temperature:
each node's row equals the target run causally over [window | anchor | the node's path], positions kept;
a window covering the whole context gives the full-context rows; both reach `exitlaw train`."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from exitlaw.engine.training.batch import tree_logit_tables, windowed_tree_logit_tables
from exitlaw.theory import DraftTree
from exitlaw.theory.sampling_settings import SamplingSettings
from helpers.cli_argv import TINY_RUN, train_argv, write_prompts

TINY_SEED = 3


def _trees(vocab: int, tokens: torch.Tensor, anchors: list[int]) -> list[DraftTree]:
    rng = np.random.default_rng(5)
    out = []
    for a in anchors:
        parent = [-1, 0, 0, 1, 1, 3, 2]
        token = [int(tokens[a])] + [int(x) for x in rng.choice(vocab, size=6, replace=False)]
        out.append(DraftTree(parent=parent, token=token))
    return out


def _path(tree: DraftTree, v: int) -> list[int]:
    nodes = []
    while v > 0:
        nodes.append(v)
        v = int(tree.parent[v])
    return nodes[::-1]


@pytest.mark.parametrize("window", [1, 3, 7])
def test_each_windowed_row_is_the_target_run_causally_over_window_anchor_and_path(pair, window):
    target, _ = pair
    torch.manual_seed(0)
    tokens = torch.randint(0, target.vocab_size, (20,))
    anchors = [2, 9, 15]  # the first anchor's window is cut by the sequence start
    trees = _trees(target.vocab_size, tokens, anchors)
    tables = windowed_tree_logit_tables(
        target, tokens, torch.tensor(anchors), trees, window, settings=SamplingSettings(0.7)
    )
    for k, (a, t) in enumerate(zip(anchors, trees)):
        left = max(0, a - window)
        for v in range(t.num_nodes):
            path = _path(t, v)
            ids = [int(x) for x in tokens[left : a + 1]] + [int(t.token[u]) for u in path]
            pos = list(range(left, a + 1)) + [a + int(t.depth[u]) for u in path]
            with torch.no_grad():
                ref = (
                    target.model(
                        input_ids=torch.tensor([ids]),
                        position_ids=torch.tensor([pos]),
                        use_cache=False,
                    )
                    .logits[0, -1]
                    .float()
                    / 0.7
                )
            torch.testing.assert_close(
                tables[k][v],
                ref,
                rtol=1e-4,
                atol=1e-4,
                msg=f"window {window}, anchor {a}, node {v}",
            )


def test_a_window_covering_the_context_gives_the_full_context_rows(pair):
    target, _ = pair
    torch.manual_seed(1)
    tokens = torch.randint(0, target.vocab_size, (16,))
    anchors = torch.tensor([4, 11])
    trees = _trees(target.vocab_size, tokens, anchors.tolist())
    cache = target.new_cache()
    step = target.prefill(cache, tokens)
    full = tree_logit_tables(
        target, cache, step.logits, anchors, trees, settings=SamplingSettings(1.0)
    )
    windowed = windowed_tree_logit_tables(
        target, tokens, anchors, trees, window=64, settings=SamplingSettings(1.0)
    )
    for f, w in zip(full, windowed):
        torch.testing.assert_close(w, f, rtol=1e-4, atol=1e-4)


def test_a_short_window_changes_the_rows_so_the_window_is_really_applied(pair):
    target, _ = pair
    torch.manual_seed(2)
    tokens = torch.randint(0, target.vocab_size, (24,))
    anchors = torch.tensor([20])
    trees = _trees(target.vocab_size, tokens, anchors.tolist())
    wide = windowed_tree_logit_tables(target, tokens, anchors, trees, window=64)
    narrow = windowed_tree_logit_tables(target, tokens, anchors, trees, window=2)
    assert (wide[0] - narrow[0]).abs().max() > 1e-3


@pytest.mark.parametrize(
    "window, temperature, message", [(0, 1.0, "window must be >= 1"), (4, 0.0, "temperature > 0")]
)
def test_bad_window_or_temperature_is_a_named_error(pair, window, temperature, message):
    target, _ = pair
    tokens = torch.zeros(8, dtype=torch.long)
    with pytest.raises(ValueError, match=message):
        windowed_tree_logit_tables(
            target,
            tokens,
            torch.tensor([3]),
            _trees(target.vocab_size, tokens, [3]),
            window,
            SamplingSettings(temperature),
        )


def test_train_config_refuses_a_bad_window():
    from exitlaw.engine.training.config import TrainConfig

    with pytest.raises(ValueError, match="prefix_window"):
        TrainConfig(prefix_window=0)
    with pytest.raises(ValueError, match="draft-opd"):
        TrainConfig(objective="draft-opd", prefix_window=8)
    assert TrainConfig(prefix_window=64).prefix_window == 64


def test_exitlaw_train_scoring_temperature_and_prefix_window_reach_the_run(tmp_path, tiny):
    from exitlaw.cli import main

    tdir, ddir = tiny
    prompts = write_prompts(tmp_path / "p.jsonl")
    out = tmp_path / "run"
    argv = train_argv(
        tdir,
        ddir,
        prompts,
        out=out,
        **TINY_RUN,
        preset="authors-code",
        scoring_temperature=0.5,
        prefix_window=4,
    )
    assert main(argv) == 0
    saved = json.loads((out / "config.json").read_text())
    cfg = saved["train"]
    assert cfg["scoring"]["temperature"] == 0.5 and cfg["prefix_window"] == 4
    with pytest.raises(SystemExit):
        main(argv[:-4] + ["--scoring-temperature", "0"])
