"""Multi-round simulated decoding: tau converges to mean(1 + C_p) for saturating exact verifiers,
records are consistent, traces round-trip through ``exitlaw law``, the CLI refuses to overwrite."""

import json

import numpy as np
import pytest
from scipy import stats

from exitlaw.cli import main as cli_main
from exitlaw.simulate import verifiers
from exitlaw.simulate.builders.caddtree import LatencyModel
from exitlaw.simulate.builders.trees import ddtree, oracle
from exitlaw.simulate.lab.decoding import aggregate, simulate_decoding, tree_coverage
from exitlaw.simulate.lab.models import NGramTarget, PositionWiseDrafter
from exitlaw.simulate.lab.presets import PRESETS, SimConfig, get_preset, verifier_fn
from exitlaw.theory import coverage_under, gather_edge_probs, read_trace
from exitlaw.theory.trace.summary import summarize_trace

ALPHA = 1e-4  # two-sided false-failure rate of each convergence check (fixed seeds: deterministic)
Z_CRIT = float(stats.norm.isf(ALPHA / 2))  # 3.89


def _setup(vocab=32, order=2, zipf=1.6, temperature=1.0, budget=12, horizon=5, noise=0.6):
    target = NGramTarget(vocab, order=order, zipf=zipf, temperature=temperature, seed=11)
    drafter = PositionWiseDrafter(target, noise=noise, seed=12)
    return target, (lambda c, rng: ddtree(drafter.marginals(c, horizon), budget))


@pytest.mark.parametrize("name", ["tev", "predraw", "residual", "tev-fast"])
def test_simulated_tau_converges_to_mean_one_plus_coverage(name):
    """``E[L | T] = 1 + C_p(T)``; the z-score of ``mean(L - (1 + C_p))`` is within z_{alpha/2}."""
    target, build = _setup()
    res = simulate_decoding(target, build, verifier_fn(name), rounds=400, seed=5, oracle=False)
    a = res.aggregates
    assert abs(a["tau_minus_ceiling_z"]) < Z_CRIT, a
    assert a["tau"] > 1.5  # the check is not vacuous: blocks are long


def _root_exit(tree, probs, rng):
    """Exact but not saturating: always exit at the root, bonus ~ p_root."""
    return 0, int(rng.choice(probs.shape[1], p=probs[0]))


def test_convergence_check_detects_a_non_saturating_verifier():
    target, build = _setup()
    res = simulate_decoding(target, build, _root_exit, rounds=400, seed=5, oracle=False)
    assert res.aggregates["tau"] == 1.0
    assert res.aggregates["tau_minus_ceiling_z"] < -Z_CRIT


def test_greedy_decoding_of_a_greedy_target_realises_the_ceiling_every_round():
    target, build = _setup(temperature=0.0)
    res = simulate_decoding(target, build, verifiers.greedy, rounds=60, seed=1, oracle=True)
    for r in res.records:
        assert r.block_length == pytest.approx(1 + r.coverage, abs=1e-12)


def test_round_records_are_consistent_with_the_tree_and_the_oracle():
    target, build = _setup()
    res = simulate_decoding(
        target, build, verifiers.tev, rounds=40, seed=2, oracle=True, latency=LatencyModel()
    )
    for r in res.records:
        assert r.block_length == r.exit_depth + 1
        assert r.budget == 12
        assert r.allocation_gap >= -1e-12
        assert r.oracle_coverage == pytest.approx(r.coverage + r.allocation_gap)
    a = res.aggregates
    assert a["tokens"] == sum(r.block_length for r in res.records)
    assert sum(a["exit_depth_histogram"]) == 40
    # the oracle builder has zero allocation gap
    orc = simulate_decoding(
        target, lambda c, rng: oracle(target, c, 12), verifiers.tev, rounds=20, seed=2
    )
    assert all(abs(r.allocation_gap) < 1e-12 for r in orc.records)


def test_tree_coverage_matches_the_numpy_reference():
    target, build = _setup()
    rng = np.random.default_rng(0)
    for ctx in [(1,), (5,), (30,)]:
        tree = build(ctx, rng).tree
        probs = np.stack([target.probs(ctx + tree.path(v)) for v in range(tree.num_nodes)])
        assert tree_coverage(tree, gather_edge_probs(tree, probs)) == pytest.approx(
            coverage_under(target.prefix_target(ctx), tree), abs=1e-12
        )


def test_speedup_follows_the_stated_latency_model():
    lat = LatencyModel(draft=2.0, base=10.0, linear=1.0, quadratic=0.0)
    # rounds: L = 3 with n = 4 and L = 1 with n = 0; AR token costs C_verify(0) = 11
    assert lat.speedup([3, 1], [4, 0]) == pytest.approx(4 * 11 / ((2 + 10 + 5) + (2 + 10 + 1)))


def test_decoding_is_reproducible_from_its_seed():
    target, build = _setup()
    a = simulate_decoding(target, build, verifiers.tev, rounds=30, seed=9, oracle=False)
    b = simulate_decoding(target, build, verifiers.tev, rounds=30, seed=9, oracle=False)
    assert [r.block_length for r in a.records] == [r.block_length for r in b.records]
    with pytest.raises(ValueError, match="rounds"):
        simulate_decoding(target, build, verifiers.tev, rounds=0)
    with pytest.raises(ValueError, match="no rounds"):
        aggregate([])


def test_every_preset_builds_every_builder():
    for cfg in PRESETS.values():
        target = cfg.target.model()
        pos, ar = cfg.drafter.models(target)
        ctx = (1, 2)[-target.context_length :]
        for name in cfg.builders:
            built = cfg.make_builder(name, target, pos, ar)(ctx, np.random.default_rng(0))
            expected = {"chain": cfg.horizon, "caddtree": built.tree.budget}.get(name, cfg.budget)
            assert built.tree.budget == expected


def test_config_json_rejects_unknown_keys_and_bad_values(tmp_path):
    with pytest.raises(ValueError, match="unknown config keys"):
        SimConfig.from_dict({"vocabb": 3})
    with pytest.raises(ValueError, match="unknown builders"):
        SimConfig(builders=("ddtre",))
    with pytest.raises(ValueError, match="greedy"):
        SimConfig.from_dict(dict(verifier="greedy", temperature=1.0))
    with pytest.raises(ValueError, match="preset"):
        get_preset("huge")
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"preset": "small", "rounds": 7}))
    cfg = SimConfig.from_file(path)
    assert cfg.rounds == 7 and cfg.target == PRESETS["small"].target
    assert SimConfig.from_dict(cfg.to_dict()) == cfg


def test_simulate_cli_writes_results_and_traces_that_exitlaw_law_reads(tmp_path, capsys):
    out = tmp_path / "run"
    argv = [
        "simulate",
        "run",
        "--preset",
        "small",
        "--rounds",
        "25",
        "--builders",
        "ddtree,oracle",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert cli_main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    agg = results["builders"]["ddtree"]["aggregates"]
    assert agg["rounds"] == 25 and results["config"]["name"] == "small"
    trace = read_trace(out / "trace_ddtree.jsonl")
    assert len(trace.rounds) == 25 and trace.meta["builder"] == "ddtree"
    summary = summarize_trace(trace)
    assert summary["totals"]["mean_coverage"] == pytest.approx(agg["mean_coverage"], abs=1e-12)
    assert summary["totals"]["tau_observed"] == pytest.approx(agg["tau"])
    assert cli_main(["law", str(out / "trace_oracle.jsonl")]) == 0
    capsys.readouterr()
    assert cli_main(argv) == 2  # refuses to overwrite
    assert "--overwrite" in capsys.readouterr().err
    assert cli_main(argv + ["--overwrite"]) == 0


def test_sampled_draft_builder_hands_its_draft_rows_to_the_sampled_verifier():
    """Tsubame + recursive rejection: row v given to the rule is the q that sampled v's children."""
    from exitlaw.simulate.builders.trees import tsubame

    target = NGramTarget(32, order=2, zipf=1.6, seed=11)
    drafter = PositionWiseDrafter(target, noise=0.6, seed=12)
    seen = []

    def spy(tree, probs, draft_rows, rng):
        seen.append((tree, draft_rows))
        return verifiers.specinfer_without_replacement(tree, probs, draft_rows, rng)

    build = lambda c, rng: tsubame(drafter.marginals(c, 4), 10, rng)  # noqa: E731
    res = simulate_decoding(
        target, build, verifier_fn("tev"), rounds=20, seed=3, oracle=False, sampled_verifier=spy
    )
    assert len(seen) == 20 and len(res.records) == 20
    for tree, rows in seen:
        for v in tree.internal:
            kids = tree.children[v]
            assert np.all(
                rows[v][tree.token[kids]] > 0
            )  # every child token had positive draft mass
        assert rows.shape[0] == tree.num_nodes
        np.testing.assert_allclose(rows.sum(1), 1.0)


def test_sampled_verifier_needs_a_builder_with_draft_rows():
    target, build = _setup()
    with pytest.raises(ValueError, match="draft rows"):
        simulate_decoding(
            target,
            build,
            verifier_fn("tev"),
            rounds=1,
            seed=0,
            oracle=False,
            sampled_verifier=verifiers.specinfer_without_replacement,
        )


def test_tsubame_rrs_is_marginally_exact_over_the_first_tokens():
    """Recursive rejection on Tsubame trees: the first emitted token follows p(. | context)."""
    from exitlaw.simulate.builders.trees import tsubame

    target = NGramTarget(8, order=1, zipf=1.2, seed=4)
    drafter = PositionWiseDrafter(target, noise=0.8, seed=5)
    context = (1,)
    p = target.probs(context)
    rng_d, rng_v = np.random.default_rng(0), np.random.default_rng(1)
    n = 6000
    counts = np.zeros(8)
    for _ in range(n):
        built = tsubame(drafter.marginals(context, 3), 6, rng_d)
        probs = np.stack(
            [target.probs(context + built.tree.path(v)) for v in range(built.tree.num_nodes)]
        )
        exit_node, bonus = verifiers.specinfer_without_replacement(
            built.tree, probs, built.draft_rows, rng_v
        )
        block = built.tree.path(exit_node) + (bonus,)
        counts[block[0]] += 1
    keep = p * n >= 20
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(p[keep] * n, p[~keep].sum() * n)
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    assert stats.chisquare(observed, expected).pvalue > 1e-6  # alpha 1e-6, fixed seeds
