"""The authors' recipe on the simulated trainer: greedy data with trees scored at T = 1 (the sweep's
``data_temperature`` setting), matched tree-term strength, and the depth the one-sided guard reads."""

from __future__ import annotations

from dataclasses import replace

import jax.numpy as jnp
import numpy as np
import pytest

from exitlaw.simulate.builders.trees import ddtree
from exitlaw.simulate.exittrain.fast import rollouts
from exitlaw.simulate.exittrain.mini import draft_logprobs, init_params, stationary
from exitlaw.simulate.exittrain.recipe import (
    AUTHORS_SIM,
    LITERAL,
    RecipeConfig,
    arm_name,
    run_recipe,
    tree_depth_fn,
)
from exitlaw.simulate.exittrain.sweep import SweepConfig, preset
from exitlaw.simulate.lab.models import NGramTarget

TINY = replace(AUTHORS_SIM, vocab=8, horizon=4, batch=4, pretrain_steps=5, steps=6, zipf=2.0)


def test_the_sweep_refuses_greedy_scoring_but_takes_greedy_data_as_its_own_setting():
    quick = preset("quick")
    with pytest.raises(ValueError, match="data_temperature=0 for greedy continuations"):
        replace(quick, train_temperature=0.0)
    cfg = replace(quick, data_temperature=0.0)
    assert cfg.data_temperature == 0.0 and cfg.train_temperature == 1.0
    assert SweepConfig(quick.regimes).data_temperature is None  # the shipped sweeps: tied
    with pytest.raises(ValueError, match="finite and >= 0"):
        replace(quick, data_temperature=-1.0)


def test_greedy_rollouts_follow_the_argmax_chain_and_scoring_stays_at_t1():
    target = NGramTarget(8, order=2, zipf=2.0, temperature=1.0, seed=0)
    m1, m0 = target.transition_matrix(), target.with_temperature(0.0).transition_matrix()
    ctx, cont = rollouts(np.random.default_rng(0), m0, stationary(m1), 3, 5, 4)
    prev = ctx
    for d in range(4):
        assert (cont[..., d] == m1[prev].argmax(-1)).all()
        prev = cont[..., d]
    assert not np.allclose(m0, m1)  # the scoring law is not the data's


def test_the_recipe_refuses_settings_it_cannot_mean():
    with pytest.raises(ValueError, match="scoring_temperature 0"):
        RecipeConfig(scoring_temperature=0.0)
    with pytest.raises(ValueError, match="share of CE"):
        RecipeConfig(strengths=(LITERAL, 1.5))
    with pytest.raises(ValueError, match=">= 2 seeds"):
        RecipeConfig(seeds=1)


def test_tree_depth_matches_the_numpy_builder():
    params = init_params(TINY, __import__("jax").random.PRNGKey(3))
    target = NGramTarget(TINY.vocab, order=2, zipf=TINY.zipf, temperature=1.0, seed=0)
    pi = stationary(target.transition_matrix())
    got = float(tree_depth_fn(jnp.asarray(pi), 6)(params))
    q = np.exp(np.asarray(draft_logprobs(params, jnp.arange(TINY.vocab)), dtype=np.float64))
    want = float(pi @ np.array([ddtree(q[c], 6).tree.max_depth for c in range(TINY.vocab)]))
    assert got == pytest.approx(want, abs=1e-5)


def test_matched_strength_puts_the_same_share_of_ce_in_every_tree_arm():
    cfg = RecipeConfig(regime=TINY, seeds=2, train_budget=6, eval_budget=6, strength_batches=3)
    res = run_recipe(cfg)
    st = res["strength"]
    ce, terms, lam = st["ce"], st["tree_term_at_lambda_1"], st["lambda"]
    assert lam[arm_name("prefix", LITERAL)] == 0.1  # the authors' coded value itself
    for s in cfg.strengths:
        share = st["literal_share"] if s == LITERAL else s
        for w in ("prefix", "exit", "exit-depth"):
            if (w, s) == ("prefix", LITERAL):
                continue
            assert lam[arm_name(w, s)] * terms[w] / ce == pytest.approx(share, rel=5e-3)
    assert st["literal_share"] == pytest.approx(0.1 * terms["prefix"] / ce)
    assert res["arms"][0] == "token" and len(res["arms"]) == 1 + 3 * len(cfg.strengths)
    tau = np.asarray(res["tau"]["token"])
    assert tau.shape == (2, 2) and (tau >= 1).all() and (tau <= 1 + TINY.horizon).all()
    assert np.asarray(res["start_depth"]).shape == (2,)
