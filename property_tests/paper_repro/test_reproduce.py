"""``exitlaw repro all``: kit verdicts, mini run, every figure and the ledger from one call, cached per stage."""

import json

import pytest

from exitlaw.paper_repro.reproduce import reproduce
from helpers.mini_configs import micro_config


@pytest.mark.slow
def test_repro_all_writes_kit_verdicts_figures_and_ledger_and_resumes(tmp_path):
    import torch

    from exitlaw.figures.registry import FIGURES

    torch.set_num_threads(1)
    out = tmp_path / "repro"
    lines: list[str] = []
    summary = reproduce(
        out, quick=True, mini_config=micro_config(), progress=False, log=lines.append
    )
    counted = [ln.split(":")[0] for ln in lines if ln.startswith("stage ") and "/" in ln]
    assert counted == [
        "stage 1/4 checks",
        "stage 2/4 mini",
        "stage 3/4 figures",
        "stage 4/4 ledger",
    ]
    assert any(ln.startswith("  mini 1/") for ln in lines)  # the mini stage counts its own stages
    assert set(summary["times"]) == {"checks_s", "mini_s", "figures_s", "ledger_s"}
    assert {v["verdict"] for v in summary["checks"].values()} == {"exact and saturating"}
    for name in FIGURES:
        assert (out / "figures" / f"{name}.png").stat().st_size > 0
        assert (out / "figures" / f"{name}.pdf").stat().st_size > 0
    ledger = json.loads((out / "ledger.json").read_text())
    first = ledger["rows"][0]
    assert first["key"] == "kit_exact_saturating" and first["verdict"] == "reproduced"
    assert len(ledger["rows"]) > 5 and {"mini", "checks"} <= set(ledger["inputs"])
    stamp = (out / "checks" / "tev.json").stat().st_mtime_ns
    again = reproduce(
        out, quick=True, mini_config=micro_config(), progress=False, log=lambda s: None
    )
    assert (out / "checks" / "tev.json").stat().st_mtime_ns == stamp  # cached, not rerun
    assert again["checks"] == summary["checks"]
    # the first run's stage times survive a cached rerun; the rerun's own are kept apart
    first = {
        k: v for k, v in summary["times"].items() if k != "ledger_s"
    }  # the ledger is always rebuilt
    assert {k: again["times"][k] for k in first} == first
    assert json.loads((out / "summary.json").read_text())["times"] == again["times"]
    assert {"checks_s", "mini_s", "figures_s"} <= set(again["rerun_times"])
    with pytest.raises(FileExistsError, match="holds a run with config"):
        reproduce(out, quick=False, mini_config=micro_config(), progress=False, log=lambda s: None)
