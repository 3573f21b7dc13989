"""Format adapters of the conformance kit: EAGLE, SGLang and DDTree layouts round-trip to exitlaw trees, an
exact verifier in each layout passes the kit, a mutant fails it, and a malformed result is named; the same for
chain rejection samplers in vLLM's layout (marginal mode, pre-drawn coins, placeholder after a rejection)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import helpers.format_verifiers as fv
from exitlaw.cli import main
from exitlaw.simulate.kit.boundary import run_boundary
from exitlaw.simulate.kit.chain_formats import ChainFormatError, from_vllm_result, to_vllm
from exitlaw.simulate.kit.conformance import (
    BAD_INPUT,
    EXACT_AND_SATURATING,
    MARGINALLY_EXACT,
    NOT_EXACT,
    check_verifier,
    run_kit,
)
from exitlaw.simulate.kit.formats import (
    PAD,
    VerifierFormatError,
    adapt_verifier,
    eagle_probs,
    from_ddtree,
    from_ddtree_result,
    from_eagle,
    from_eagle_result,
    from_sglang,
    from_sglang_result,
    to_ddtree,
    to_eagle,
    to_sglang,
)
from exitlaw.simulate.strategies import draft_trees, trees_with_rows
from exitlaw.theory import DraftTree

# ----- tree conversions ---------------------------------------------------------------------------


@given(draft_trees(max_nodes=14, max_depth=5, max_branching=4, vocab_size=6))
def test_eagle_tree_roundtrip(tree):
    cand, ret = to_eagle(tree)
    assert from_eagle(cand, ret) == tree
    assert ret.shape == (tree.leaves.size, tree.max_depth + 1) and (ret[:, 0] == 0).all()
    assert {int(r[r != PAD][-1]) for r in ret} == set(tree.leaves.tolist())  # one row per leaf path
    assert ((cand == PAD) == (ret == PAD)).all()
    assert (cand[ret != PAD] == np.asarray(tree.token)[ret[ret != PAD]]).all()
    keys = [tuple(x if x != PAD else tree.num_nodes for x in r) for r in ret.tolist()]
    assert keys == sorted(keys)  # EAGLE's order: lexicographic, padding after every index


@given(draft_trees(max_nodes=14, max_depth=5, max_branching=4, vocab_size=6))
def test_sglang_tree_roundtrip(tree):
    cand, index, first, sibling = to_sglang(tree)
    assert from_sglang(cand, first, sibling) == tree
    assert cand.shape == index.shape == first.shape == sibling.shape == (1, tree.num_nodes)
    assert (index[0] == np.arange(tree.num_nodes)).all()
    for v, kids in enumerate(
        tree.children
    ):  # walking the links gives the children, in increasing position
        walk, u = [], int(first[0, v])
        while u != PAD:
            walk.append(u)
            u = int(sibling[0, u])
        assert walk == sorted(int(k) for k in kids)


@given(draft_trees(max_nodes=14, max_depth=5, max_branching=4, vocab_size=6))
def test_ddtree_tree_roundtrip(tree):
    d = to_ddtree(tree)
    assert from_ddtree(d["root_token_id"], d["node_token_ids"], d["parents"]) == tree
    n = tree.num_nodes
    assert (
        d["parents"][0] == -1 and len(d["parents"]) == n and d["node_token_ids"].shape == (n - 1,)
    )
    assert (d["node_depths"] == tree.depth[1:]).all()
    for v in range(n):  # DDTree's visibility: row v sees its ancestors and itself
        assert set(np.flatnonzero(d["visibility"][v]).tolist()) == set(tree.path_nodes(v))
        assert d["child_maps"][v] == {int(tree.token[u]): int(u) for u in tree.children[v]}


@settings(max_examples=30)
@given(trees_with_rows(max_nodes=10))
def test_eagle_rows_are_the_node_rows_along_each_path(case):
    tree, probs, _ = case
    _, ret = to_eagle(tree)
    rows = eagle_probs(probs, ret)
    assert rows.shape == ret.shape + (probs.shape[1],)
    assert np.isnan(rows[ret == PAD]).all()
    assert (rows[ret != PAD] == probs[ret[ret != PAD]]).all()


def test_malformed_trees_in_a_format_are_named():
    with pytest.raises(VerifierFormatError, match="must start at node 0"):
        from_eagle([[5, 1]], [[1, 2]])
    with pytest.raises(VerifierFormatError, match="in one path and"):
        from_eagle([[5, 1], [5, 2]], [[0, 1], [0, 1]])
    with pytest.raises(VerifierFormatError, match="lie on no row"):
        from_eagle([[5, 1]], [[0, 2]])
    with pytest.raises(VerifierFormatError, match="reached by no link"):
        from_sglang([[5, 1, 2]], [[1, -1, -1]], [[-1, -1, -1]])
    with pytest.raises(VerifierFormatError, match="seen twice"):
        from_sglang([[5, 1, 2]], [[1, -1, -1]], [[-1, 1, -1]])
    with pytest.raises(VerifierFormatError, match="2 parents but 3 nodes"):
        from_ddtree(5, [1, 2], [-1, 0])


# ----- the kit through the adapter -----------------------------------------------------------------
PAIRS = [
    ("eagle", fv.eagle_residual, fv.eagle_bonus_full_row),
    ("sglang", fv.sglang_target_only, fv.sglang_coin_not_cumulative),
    ("ddtree", fv.ddtree_predraw, fv.ddtree_rows_shifted),
]


@pytest.mark.parametrize("fmt,exact,mutant", PAIRS, ids=[p[0] for p in PAIRS])
def test_kit_passes_the_exact_verifier_and_fails_the_mutant_in_each_format(fmt, exact, mutant):
    good = run_kit(exact, name=exact.__name__, seed=2, verifier_format=fmt)
    assert good.verdict == EXACT_AND_SATURATING and good.exit_code == 0, good.failure
    assert good.verifier_format == fmt and f"--format {fmt}" in good.reproduce
    bad = run_kit(mutant, name=mutant.__name__, seed=2, verifier_format=fmt)
    assert bad.verdict == NOT_EXACT and bad.exit_code == 1
    assert bad.failure["check"].startswith("completed_block")


@pytest.mark.parametrize(
    "fmt,exact,leq",
    [
        ("eagle", fv.eagle_residual, fv.eagle_leq_coin),
        ("sglang", fv.sglang_target_only, fv.sglang_leq_coin),
    ],
)
def test_boundary_coins_through_the_adapter_flag_leq_acceptance(fmt, exact, leq):
    # SGLang's layout reads all N + 1 coins at once, so no earlier-draw pattern is pruned: 4 positions (15
    # patterns per value, about 10 s) instead of the default 8 (255 per value)
    ok = run_boundary(adapt_verifier(exact, fmt), seed=0, positions=4 if fmt == "sglang" else 8)
    assert ok.exit_code == 0 and not ok.flagged and not ok.errors and ok.calls_ok == ok.runs
    bad = run_boundary(adapt_verifier(leq, fmt), seed=0)
    assert bad.exit_code == 1 and "zero-probability child was accepted" in bad.flagged[0]["why"]


@pytest.mark.parametrize(
    "spec,fmt,message",
    [
        ("helpers.format_verifiers:eagle_accept_length_with_root", "eagle", "accept_length"),
        (
            "helpers.format_verifiers:sglang_forgets_accept_token_num",
            "sglang",
            "accept_token_num -1",
        ),
        (
            "helpers.format_verifiers:ddtree_skips_root",
            "ddtree",
            "not a path of tree nodes from the root",
        ),
        ("exitlaw.simulate.verifiers:tev", "eagle", "cannot be called as a eagle-format verifier"),
        (
            "helpers.format_verifiers:eagle_residual",
            "ddtree",
            "cannot be called as a ddtree-format verifier",
        ),
    ],
)
def test_malformed_results_and_signatures_are_bad_input_with_the_reason(spec, fmt, message):
    rep = check_verifier(spec, seed=0, samples=200, verifier_format=fmt)
    assert rep.verdict == BAD_INPUT and rep.exit_code == 2
    assert message in rep.error and rep.verifier_format == fmt


def test_result_checks_name_what_is_wrong():
    tree = DraftTree.from_paths([(1,), (3,), (1, 2)], root_token=0)  # nodes 1: 1, 2: 3, 3: 1 2
    _, ret = to_eagle(tree)
    with pytest.raises(VerifierFormatError, match="best_candidate 7 is outside"):
        from_eagle_result((7, 0, 1), ret, 4)
    with pytest.raises(
        VerifierFormatError, match="expected .best_candidate, accept_length, bonus_token"
    ):
        from_eagle_result((0, 0.5, 1), ret, 4)
    with pytest.raises(VerifierFormatError, match="bonus_token is 4, outside the vocabulary"):
        from_eagle_result((0, 0, 4), ret, 4)
    assert from_eagle_result((0, 2, 3), ret, 4) == (int(ret[0, 2]), 3)
    with pytest.raises(
        VerifierFormatError, match=r"predicts\[0\] = 3 but accepted position 1 has token 1"
    ):
        from_sglang_result(tree, [3, 0, 0, 0], [[0, 1, -1]], [1], 4)
    with pytest.raises(VerifierFormatError, match="not a path from the root"):
        from_sglang_result(tree, [1, 0, 0, 0], [[0, 3, -1]], [1], 4)
    assert from_sglang_result(tree, [1, 0, 0, 0], [[0, 1, -1]], [1], 4) == (1, 0)
    with pytest.raises(VerifierFormatError, match="expected .accepted_indices, next_token"):
        from_ddtree_result([0, 1], tree, 4)
    with pytest.raises(VerifierFormatError, match="next_token is -1"):
        from_ddtree_result(([0, 1], -1), tree, 4)


def test_an_sglang_verifier_that_returns_its_outputs_is_told_to_write_them_in_place():
    def returns(**kw):
        return kw["predicts"], kw["accept_index"], kw["accept_token_num"]

    f = adapt_verifier(returns, "sglang")
    tree = DraftTree.chain([1, 2], root_token=0)
    with pytest.raises(VerifierFormatError, match="returns None"):
        f(tree, np.full((3, 4), 0.25), np.random.default_rng(0))


def test_format_is_refused_in_marginal_mode_and_unknown_formats_are_named():
    with pytest.raises(ValueError, match="applies to --mode conditional"):
        run_kit(fv.eagle_residual, mode="marginal", verifier_format="eagle")
    with pytest.raises(ValueError, match="unknown verifier format 'tgi'"):
        adapt_verifier(fv.eagle_residual, "tgi")
    with pytest.raises(ValueError, match="run it with --mode marginal --chains-only"):
        adapt_verifier(fv.vllm_chain, "vllm")
    with pytest.raises(ValueError, match="run it with --mode marginal --chains-only"):
        run_kit(fv.vllm_chain, mode="marginal", verifier_format="vllm")  # trees need --chains-only


# ----- vLLM's chain layout -------------------------------------------------------------------------
def test_vllm_layout_of_a_chain_and_its_results():
    tree = DraftTree.chain([2, 0, 1], root_token=0)
    p, q = np.full((4, 3), 1 / 3), np.array([[0.5, 0.25, 0.25]] * 4)
    d = to_vllm(tree, p, q)
    assert d["draft_token_ids"].tolist() == [2, 0, 1] and d["cu_num_draft_tokens"].tolist() == [3]
    assert d["draft_probs"].shape == d["target_probs"].shape == (3, 3)
    assert not d["target_probs"].flags.writeable
    assert from_vllm_result([[2, 0, 1, 2]], d["draft_token_ids"], 3) == (
        3,
        2,
    )  # all accepted, bonus 2
    assert from_vllm_result([[2, 1, -1, -1]], d["draft_token_ids"], 3) == (
        1,
        1,
    )  # rejected at 1, recovered 1
    assert from_vllm_result(np.array([[0, -1, -1, -1]]), d["draft_token_ids"], 3) == (0, 0)
    with pytest.raises(ChainFormatError, match="then only the placeholder"):
        from_vllm_result([[2, -1, 1, -1]], d["draft_token_ids"], 3)
    with pytest.raises(ChainFormatError, match="position 0 holds 1, but"):
        from_vllm_result([[1, 0, -1, -1]], d["draft_token_ids"], 3)
    with pytest.raises(ChainFormatError, match=r"shape \[1, 4\]"):
        from_vllm_result([2, 0, 1, 2], d["draft_token_ids"], 3)
    with pytest.raises(ChainFormatError, match="outside the vocabulary"):
        from_vllm_result([[2, 7, -1, -1]], d["draft_token_ids"], 3)
    with pytest.raises(ChainFormatError, match="takes chains"):
        to_vllm(DraftTree.from_paths([(1,), (2,)]), np.full((3, 3), 1 / 3), np.full((3, 3), 1 / 3))


def test_kit_passes_a_vllm_layout_chain_sampler_and_fails_its_mutant():
    good = run_kit(
        fv.vllm_chain, name="vllm_chain", mode="marginal", chains_only=True, verifier_format="vllm"
    )
    assert good.verdict == MARGINALLY_EXACT and good.exit_code == 0 and good.min_power >= 0.999
    assert "--format vllm" in good.reproduce
    bad = run_kit(
        fv.vllm_recovered_from_target, mode="marginal", chains_only=True, verifier_format="vllm"
    )
    assert bad.verdict == NOT_EXACT and bad.failure["check"].startswith("completed_block")


def test_boundary_coins_reach_the_vllm_layout_through_the_pre_drawn_uniforms():
    bad = run_boundary(
        adapt_verifier(fv.vllm_leq_coin, "vllm", mode="marginal"), mode="marginal", chains_only=True
    )
    assert bad.exit_code == 1 and float.fromhex(bad.flagged[0]["coin"]) == 0.0
    assert "zero-probability child was accepted" in bad.flagged[0]["why"]
    # the exact twin: positions 4 covers the bonus draw and the three coins (about 5 s)
    ok = run_boundary(
        adapt_verifier(fv.vllm_chain, "vllm", mode="marginal"),
        mode="marginal",
        chains_only=True,
        positions=4,
    )
    assert ok.exit_code == 0 and not ok.flagged and not ok.errors and ok.calls_ok == ok.runs > 1000


@pytest.mark.parametrize(
    "verifier, reason",
    [
        ("vllm_writes_after_rejection", "then only the placeholder -1"),
        ("eagle_residual", "cannot be called as a vllm-format sampler"),
    ],
    ids=["writes-after-rejection", "not-a-vllm-signature"],
)
def test_malformed_vllm_output_is_bad_input_with_the_reason(verifier, reason):
    rep = check_verifier(
        f"helpers.format_verifiers:{verifier}",
        mode="marginal",
        chains_only=True,
        samples=300,
        verifier_format="vllm",
    )
    assert rep.verdict == BAD_INPUT and reason in rep.error


# ----- the command line ----------------------------------------------------------------------------
def test_check_command_with_format_eagle_end_to_end(tmp_path, monkeypatch, capsys):
    (tmp_path / "my_eagle_verifiers.py").write_text(
        "from helpers.format_verifiers import eagle_residual as verify, eagle_bonus_full_row as broken\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["check", "my_eagle_verifiers:verify", "--format", "eagle", "--seed", "4"]) == 0
    out = capsys.readouterr().out
    assert "format eagle" in out and "verdict: exact and saturating" in out
    assert main(["check", "my_eagle_verifiers:broken", "--format", "eagle", "--seed", "4"]) == 1
    out = capsys.readouterr().out
    assert "verdict: NOT EXACT" in out and "--format eagle" in out
    assert main(["check", "my_eagle_verifiers:verify", "--format", "sglang"]) == 2
    assert "cannot be called as a sglang-format verifier" in capsys.readouterr().err
    assert (
        main(
            ["check", "helpers.format_verifiers:eagle_leq_coin", "--format", "eagle", "--boundary"]
        )
        == 1
    )
    assert main(["check", "my_eagle_verifiers:verify", "--format", "eagle", "--boundary"]) == 0
