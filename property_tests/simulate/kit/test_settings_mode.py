"""Settings mode of the kit: the verifier gets raw logits and the sampling settings; the kit drafts from the
processed draft rows and judges against the processed target law. exitlaw's own verifiers pass, and every bug
class of the settings zoo (helpers/settings_mutants.py) is rejected, with the kit's power against it computed
exactly from the mutant's enumerated law."""

from __future__ import annotations

import json

import numpy as np
import pytest

from exitlaw.cli import main
from exitlaw.simulate.kit.checks import auto_samples
from exitlaw.simulate.kit.conformance import (
    BAD_INPUT,
    EXACT_AND_SATURATING,
    MARGINALLY_EXACT,
    NOT_EXACT,
    check_verifier,
    run_kit,
)
from exitlaw.simulate.kit.settings_cases import DEFAULT_PANEL, settings_cases
from exitlaw.simulate.verifiers.with_settings import chain_speculative_settings, residual_settings
from exitlaw.theory import SamplingSettings
from helpers.settings_mutants import EXACT, SETTINGS_MUTANTS, completed_law, completed_power

ALL_THREE = DEFAULT_PANEL[3]  # T = 1.2, top-k 3, top-p 0.8, min-p 0.1, HF order
# per mutant, a setting of the panel under which its bug shows (each bug class needs its filter active), and
# the power target the kit is run at (the residual bug is the subtlest: the kit is asked for more power)
WHERE = {
    "q_unfiltered": (DEFAULT_PANEL[0], 0.999),
    "drafter_returns_raw": (DEFAULT_PANEL[0], 0.999),
    "target_rows_split": (DEFAULT_PANEL[1], 0.999),
    "setting_on_bonus_only": (DEFAULT_PANEL[2], 0.999),
    "residual_zeroes_token": (ALL_THREE, 0.99999),
}


def test_the_settings_cases_bite():
    """Every setting of the panel removes tokens from the processed target rows the kit judges against."""
    for mode in ("conditional", "marginal"):
        for sc in settings_cases(0, DEFAULT_PANEL, mode=mode):
            row = sc.case.target(())
            assert (row == 0).any() and np.isclose(row.sum(), 1.0)
            assert sc.settings.filtered


@pytest.mark.slow
def test_exitlaw_verifiers_pass_settings_mode():
    """About 15 s: the chain sampler (marginal) and the sequential residual (conditional) under all three filters."""
    rep = run_kit(chain_speculative_settings, mode="marginal", chains_only=True, settings=ALL_THREE)
    assert rep.verdict == MARGINALLY_EXACT and rep.min_power >= 0.999, rep.failure
    assert (
        rep.settings == [ALL_THREE.as_dict()]
        and "--top-k 3" in rep.reproduce
        and "--sampling-order hf" in rep.reproduce
    )
    assert all(c["settings"] == ALL_THREE.as_dict() for c in rep.cases)
    rep = run_kit(residual_settings, settings=ALL_THREE)
    assert rep.verdict == EXACT_AND_SATURATING and rep.min_power >= 0.999, rep.failure


@pytest.mark.slow
@pytest.mark.parametrize("mutant", SETTINGS_MUTANTS, ids=[m.name for m in SETTINGS_MUTANTS])
def test_kit_rejects_each_settings_bug_with_computed_power(mutant):
    """About 4 s each: rejected, and the kit's power against the mutant's exact law is >= 0.999."""
    st, target = WHERE[mutant.name]
    rep = run_kit(
        mutant.sample,
        name=mutant.name,
        mode="marginal",
        chains_only=True,
        settings=st,
        power=target,
    )
    assert rep.verdict == NOT_EXACT and rep.exit_code == 1, (
        f"{mutant.name} ({mutant.bug}): {rep.failure}"
    )
    assert rep.failure["check"].startswith("completed_block")
    (sc,) = settings_cases(0, [st], mode="marginal", chains_only=True)
    n = auto_samples(sc.case, rep.alpha_per_check / 2, rep.power_target, rep.delta)
    assert rep.cases[0]["samples"] == n
    power = completed_power(
        completed_law(mutant.procedure, sc), sc.case.target, sc.case.horizon, n, rep.alpha_per_check
    )
    print(f"{mutant.name}: computed power {power:.6f} under {st.as_dict()}")
    assert power >= 0.999, f"{mutant.name}: computed power {power}"


def test_the_power_computation_sees_no_deviation_in_the_exact_chain():
    """The power calculation can fail: on the exact procedure (the null) it is the level, not ~1."""
    (sc,) = settings_cases(0, [DEFAULT_PANEL[0]], mode="marginal", chains_only=True)
    power = completed_power(
        completed_law(EXACT.procedure, sc), sc.case.target, sc.case.horizon, 3000, 1e-6
    )
    assert power < 1e-3


def test_settings_mode_signature_and_input_errors():
    rep = check_verifier(
        "exitlaw.simulate.verifiers:chain_speculative",
        mode="marginal",
        chains_only=True,
        settings=ALL_THREE,
        samples=50,
    )
    assert rep.verdict == BAD_INPUT and "settings" in rep.error and "draft_logits" in rep.error
    with pytest.raises(ValueError, match="settings must be a SamplingSettings"):
        run_kit(chain_speculative_settings, mode="marginal", settings=[{"temperature": 1}])
    with pytest.raises(ValueError, match="top_k must be >= 1"):
        SamplingSettings(1.0, top_k=0)


def test_check_command_in_settings_mode(capsys):
    code = main(
        [
            "check",
            "helpers.settings_mutants:setting_on_bonus_only_verifier",
            "--mode",
            "marginal",
            "--chains-only",
            "--temperature",
            "0.8",
            "--top-k",
            "2",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["verdict"] == NOT_EXACT and out["settings"][0]["top_k"] == 2
    assert "--temperature 0.8 --top-k 2" in out["reproduce"]
    assert main(["check", "exitlaw.simulate.verifiers:tev", "--sampling-order", "hf"]) == 2
    assert "--sampling-order needs settings mode" in capsys.readouterr().err
    assert main(["check", "exitlaw.simulate.verifiers:tev", "--boundary", "--top-k", "2"]) == 2
    assert "statistical only" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # the one sampling-flag parser of every command
        main(["check", "exitlaw.simulate.verifiers:tev", "--top-p", "1.5"])
    assert refused.value.code == 2
    assert "expected a top-p in (0, 1]" in capsys.readouterr().err


@pytest.mark.slow
def test_conditional_settings_mode_rejects_a_filter_dropped_on_the_verified_tokens():
    """About 5 s: a fixed-tree residual verifier that accepts with temperature-only rows and draws the bonus from
    the processed residual is not exact under top-k; the kit's power against its exact law is >= 0.999."""
    from helpers.settings_mutants import (
        fixed_tree_completed_law,
        residual_setting_on_bonus_only,
        residual_setting_on_bonus_only_verifier,
    )

    st = DEFAULT_PANEL[0]
    rep = run_kit(residual_setting_on_bonus_only_verifier, settings=st)
    assert rep.verdict == NOT_EXACT and rep.failure["check"].startswith("completed_block"), (
        rep.failure
    )
    (sc,) = settings_cases(0, [st], mode="conditional")
    n = rep.cases[0]["samples"]
    power = completed_power(
        fixed_tree_completed_law(residual_setting_on_bonus_only, sc),
        sc.case.target,
        sc.case.horizon,
        n,
        rep.alpha_per_check,
    )
    print(f"residual_setting_on_bonus_only: computed power {power:.6f}")
    assert power >= 0.999
