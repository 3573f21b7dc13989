"""The conformance kit: accepts exact saturating verifiers, gives clear errors for broken callables."""

from __future__ import annotations

import json

import numpy as np
import pytest

from exitlaw.cli import main
from exitlaw.simulate.kit.cases import conditional_cases
from exitlaw.simulate.kit.conformance import (
    BAD_INPUT,
    EXACT_AND_SATURATING,
    INSUFFICIENT,
    MARGINALLY_EXACT,
    NOT_EXACT,
    VERIFIER_FAILED,
    load_verifier,
    run_kit,
)
from exitlaw.simulate.verifiers import (
    greedy,
    predraw,
    residual,
    specinfer,
    specinfer_without_replacement,
    tev,
)


@pytest.mark.slow
@pytest.mark.parametrize("fn", [predraw, residual, tev], ids=["predraw", "residual", "tev"])
@pytest.mark.parametrize("k", range(2))
def test_kit_accepts_exact_saturating_verifiers_across_seeds(fn, k, seed_below):
    seed = seed_below(10_000)
    rep = run_kit(fn, name=fn.__name__, seed=seed)
    assert rep.verdict == EXACT_AND_SATURATING, f"seed {seed}: {rep.failure}"
    assert rep.exit_code == 0
    assert rep.min_power >= rep.power_target - 1e-9
    assert rep.alpha_per_check * len(rep.cases) * 5 == pytest.approx(rep.family_alpha)


def test_check_command_exits_zero_for_tev_and_prints_alpha_and_power(capsys):
    assert main(["check", "exitlaw.simulate.verifiers:tev", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "false-failure rate <= 1e-06" in out and "power >= 0.999" in out
    assert "verdict: exact and saturating" in out


def test_check_command_json_report(capsys):
    # 400 rounds per case are too few for the stated power: no exactness verdict, exit status 5
    assert main(["check", "exitlaw.simulate.verifiers:predraw", "--json", "--samples", "400"]) == 5
    rep = json.loads(capsys.readouterr().out)
    assert (
        rep["verdict"] == INSUFFICIENT
        and rep["exit_code"] == 5
        and rep["min_power"] < rep["power_target"]
    )
    names = {c["name"] for c in rep["cases"]}
    assert {"rho_zero", "tiny_tail", "vocab2", "deep_chain", "wide_star", "zero_edge"} <= names
    assert {k["name"].split(" k=")[0] for k in rep["cases"][0]["checks"]} == {
        "completed_block",
        "block",
        "exit",
        "residual_bonus",
        "mean_length",
    }


def test_not_exact_report_names_tree_node_statistic_pvalue_and_seed(capsys):
    rc = main(["check", "exitlaw.simulate.verifiers:greedy", "--seed", "5"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "verdict: NOT EXACT" in out and "tree {'parent'" in out and "node " in out
    assert "statistic" in out and "p-value" in out and "--seed 5" in out


def _bonus_from_p_not_residual(tree, probs, draft_probs, rng):
    """Chain/tree rejection with the bonus drawn from ``p`` instead of ``norm((p - q)+)``: not exact."""
    v = 0
    while True:
        kids = tree.children[v]
        nxt = None
        for u in kids:
            x = int(tree.token[u])
            if rng.random() < min(1.0, probs[v][x] / draft_probs[v][x]):
                nxt = int(u)
                break
        if nxt is None:
            return v, int(rng.choice(probs.shape[1], p=probs[v] / probs[v].sum()))
        v = nxt


def test_marginal_mode_on_chains_accepts_chain_speculative_sampling(capsys):
    assert (
        main(
            [
                "check",
                "exitlaw.simulate.verifiers:chain_speculative",
                "--mode",
                "marginal",
                "--chains-only",
                "--seed",
                "4",
            ]
        )
        == 0
    )
    assert "verdict: exact averaged over the drafts" in capsys.readouterr().out


def test_marginal_mode_accepts_without_replacement_rejection_and_rejects_wrong_rules():
    good = run_kit(specinfer_without_replacement, mode="marginal", seed=1)
    assert good.verdict == MARGINALLY_EXACT and good.exit_code == 0, good.failure
    bad = run_kit(_bonus_from_p_not_residual, mode="marginal", seed=1)
    assert bad.verdict == NOT_EXACT and bad.exit_code == 1
    # the i.i.d. (SpecInfer) rule applied to siblings drawn without replacement is not exact
    mismatch = run_kit(specinfer, mode="marginal", seed=1)
    assert mismatch.verdict == NOT_EXACT, mismatch.failure


@pytest.mark.parametrize(
    "spec,message",
    [
        ("no_such_module_xyz:f", "cannot import module"),
        ("exitlaw.simulate.verifiers:no_such_fn", "has no attribute"),
        ("exitlaw.simulate.verifiers", "expected MODULE:CALLABLE"),
        ("exitlaw.simulate.kit.conformance:CHECKS", "not a callable"),
        ("helpers.mutants:wrong_signature", "cannot be called as f(tree, probs, rng)"),
        ("helpers.mutants:returns_none", "expected (exit_node, bonus_token)"),
        ("helpers.mutants:returns_fraction_node", "expected (exit_node, bonus_token)"),
        ("helpers.mutants:returns_out_of_range", "outside vocabulary"),
    ],
)
def test_check_command_gives_clear_errors(spec, message, capsys):
    assert main(["check", spec, "--samples", "50"]) == 2
    assert message in capsys.readouterr().err


def test_a_verifier_that_raises_is_reported_with_its_error_and_every_case_still_runs():
    def boom(tree, probs, rng):
        raise RuntimeError("kaboom")

    rep = run_kit(boom, name="m:boom", samples=10, seed=7)
    assert rep.verdict == VERIFIER_FAILED and rep.exit_code == 4
    assert len(rep.errors) == len(rep.cases) == len(conditional_cases(7))
    err = rep.errors[0]
    assert (
        "raised RuntimeError: kaboom" in err["error"]
        and err["seed"] == 7
        and "parent" in err["tree"]
    )
    assert (
        err["reproduce"].startswith("exitlaw check m:boom")
        and f"--case {err['case']}" in err["reproduce"]
    )
    assert "RuntimeError: kaboom" in err["traceback"] and "boom" in err["traceback"]


def _crash_on_random_case_else_greedy(tree, probs, rng):
    if tree.num_nodes == 9:  # the random case (budget 8); it comes first
        raise KeyError("crash in the first case")
    return greedy(tree, probs, rng)


def _greedy_else_crash_on_last_cases(tree, probs, rng):
    if probs.shape[1] >= 8:  # wide_star and large_vocab, the last cases
        raise KeyError("crash in a late case")
    return greedy(tree, probs, rng)


@pytest.mark.parametrize(
    "fn", [_crash_on_random_case_else_greedy, _greedy_else_crash_on_last_cases]
)
def test_a_crash_never_hides_a_not_exact_result_whatever_the_case_order(fn):
    rep = run_kit(fn, samples=300, seed=2, keep_going=True)
    assert rep.verdict == NOT_EXACT and rep.exit_code == 1, rep.failure
    assert rep.errors and all("KeyError" in e["error"] for e in rep.errors)
    assert len(rep.cases) == len(conditional_cases(2))  # every case ran and is reported


def test_a_verifier_that_never_returns_is_stopped_by_the_timeout():
    def hang(tree, probs, rng):
        if tree.num_nodes == 9:
            while True:
                pass
        return predraw(tree, probs, rng)

    rep = run_kit(hang, samples=20, timeout=0.2, only_case="random")
    assert rep.verdict == VERIFIER_FAILED and rep.exit_code == 4
    assert "did not return within the timeout of 0.2 s" in rep.errors[0]["error"]


@pytest.mark.parametrize(
    "source,message",
    [
        ("def f(tree, probs, rng):\n    return (0, 0\n", "syntax error"),
        ("import sys\nsys.exit(0)\n", "sys.exit(0)"),
        ("raise RuntimeError('broken at import')\n", "RuntimeError at import"),
    ],
)
def test_module_errors_at_import_are_bad_input_with_a_json_report(
    source, message, tmp_path, monkeypatch, capsys
):
    name = f"user_verifier_{abs(hash(source)) % 10**8}"
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["check", f"{name}:f", "--json", "--samples", "10"]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    rep = json.loads(captured.out)
    assert rep["verdict"] == BAD_INPUT and rep["exit_code"] == 2 and message in rep["error"]


def test_too_few_samples_on_a_wrong_verifier_never_say_exact(capsys):
    rc = main(["check", "helpers.mutants:bonus_full_row_verifier", "--samples", "3"])
    out = capsys.readouterr().out
    assert (
        rc in (1, 5) and "exact and saturating" not in out and "not saturating" not in out.lower()
    )
    if rc == 5:
        assert "verdict: INSUFFICIENT SAMPLES" in out


def test_json_report_is_printed_when_a_case_fails(capsys):
    assert main(["check", "helpers.mutants:returns_none", "--json", "--samples", "10"]) == 2
    assert json.loads(capsys.readouterr().out)["verdict"] == BAD_INPUT


def test_load_verifier_returns_the_callable():
    assert load_verifier("exitlaw.simulate.verifiers:tev") is tev
    assert load_verifier("exitlaw.simulate.verifiers:tev")(
        __import__("exitlaw.theory", fromlist=["DraftTree"]).DraftTree.chain([0]),
        np.array([[0.5, 0.5], [0.5, 0.5]]),
        np.random.default_rng(0),
    )[0] in (0, 1)


def test_verifier_sim_bench_prints_rates(capsys):
    assert (
        main(
            [
                "bench",
                "sim-verifiers",
                "--vocab",
                "50",
                "--budget",
                "8",
                "--samples",
                "200",
                "--calls",
                "5",
                "--no-kit",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "samples/s" in out and "tev_many" in out and "predraw" in out


@pytest.mark.parametrize(
    "spec,code,verdict",
    [
        ("helpers.mutants:bonus_full_row_verifier", 1, "NOT EXACT"),
        ("helpers.mutants:first_child_only_verifier", 3, "EXACT BUT NOT SATURATING"),
    ],
)
def test_check_command_exit_status_names_the_verdict(spec, code, verdict, capsys):
    assert main(["check", spec, "--seed", "2"]) == code
    assert f"verdict: {verdict}" in capsys.readouterr().out


def test_every_row_is_one_test_judged_against_its_own_threshold(capsys):
    rep = run_kit(greedy, samples=300, seed=5, keep_going=True)
    horizon = {c.name: c.horizon for c in conditional_cases(5)}
    for case in rep.cases:
        names = [c["name"] for c in case["checks"]]
        assert [n for n in dict.fromkeys(names) if n.startswith("completed_block")] == [
            f"completed_block k={k}" for k in range(1, horizon[case["name"]] + 1)
        ]
        for c in case["checks"]:
            assert c["rejected"] == (c["pvalue"] < c["threshold"]), c
            if c["test"] == "chi-square" and c["name"] in ("block", "exit"):
                assert c["threshold"] == pytest.approx(rep.alpha_per_check / 2)
            if c["name"].startswith("completed"):  # each prefix length at alpha / horizon
                assert c["alpha"] == pytest.approx(rep.alpha_per_check / horizon[case["name"]])
            if c["test"] == "max cell":  # Bonferroni over the cells of its own test
                assert c["threshold"] == pytest.approx(c["alpha"] / 2 / c["dof"])


def test_zero_cell_failures_read_one_way():
    rep = run_kit(mutants_by_name("bonus_full_row").sample, samples=400, seed=1, keep_going=True)
    zero_rows = [c for case in rep.cases for c in case["checks"] if c["test"] == "zero cell"]
    assert zero_rows
    for c in zero_rows:
        assert c["pvalue"] == 0.0 and c["rejected"] and c["statistic"] >= 1 and c["dof"] == 0
        assert (
            c["worst"]["reason"] == "count in a zero cell" and c["worst"]["count"] == c["statistic"]
        )
    # no other row carries an infinite statistic
    assert all(np.isfinite(c["statistic"]) for case in rep.cases for c in case["checks"])
    from exitlaw.simulate.kit.report import format_report

    text = format_report(rep)
    assert "count in a zero cell: " in text and " inf " not in text


def mutants_by_name(name):
    from helpers.mutants import BY_NAME

    return BY_NAME[name]


def test_a_run_where_every_call_fails_reports_no_samples_and_no_power():
    """A report must not print a computed power or a sample count for checks that never ran."""

    def always_fails(tree, probs, rng):
        raise RuntimeError("boom")

    rep = run_kit(always_fails, name="always_fails", samples=30).to_json()
    assert rep["verdict"] == "verifier failed" and rep["exit_code"] == 4
    assert rep["total_samples"] == 0 and rep["min_power"] is None
    assert all(
        c["samples"] == 0 and c["planned_samples"] == 30 and c["checks"] == [] for c in rep["cases"]
    )
    from exitlaw.simulate.kit.conformance import KitReport
    from exitlaw.simulate.kit.report import format_report

    text = format_report(KitReport(**rep))
    assert "power: none computed (every call of the verifier failed; 0 samples judged)" in text
    assert "power >=" not in text and "smallest computed" not in text


def test_a_crash_repeated_in_every_case_prints_its_traceback_once():
    """Eight cases failing the same way print one traceback; a different crash prints its own."""
    from exitlaw.simulate.kit.report import format_report

    def crash_by_size(tree, probs, rng):
        if tree.num_nodes == 9:  # the random case only
            raise KeyError("the other crash")
        raise RuntimeError("kaboom")

    rep = run_kit(crash_by_size, name="m:crash", samples=10, seed=7)
    text = format_report(rep)
    assert len(rep.errors) == len(conditional_cases(7)) > 2
    assert text.count('raise RuntimeError("kaboom")') == 1
    assert text.count('raise KeyError("the other crash")') == 1
    assert text.count("(same traceback as case ") == len(rep.errors) - 2
