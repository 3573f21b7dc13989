"""Fault injection: ``repro mini`` (a toy-sized configuration, run as a script in a subprocess) killed by
SIGINT or SIGKILL at a seeded random point, then rerun. Whatever the kill left is either absent or whole
(byte-equal to an uninterrupted run's), and the rerun's outputs equal an uninterrupted run's: weights and
token arrays byte for byte, ``results.json`` minus its wall-clock fields, ``results.md`` its rendering."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

SCRIPT = """
import sys, torch
from exitlaw.paper_repro.mini.pipeline import config_for, run_mini
from exitlaw.paper_repro.mini.target import TargetSpec
torch.set_num_threads(1)
cfg = config_for("quick", target=TargetSpec.from_json(dict(hidden_size=32, intermediate_size=64, num_layers=2,
                 num_heads=2, num_kv_heads=1, head_dim=16, steps=20, batch_size=4, seq_len=64)),
                 vocab_size=300, train_tokens=60_000, tokenizer_docs=20, train_prompts=12, prompt_tokens=32,
                 continuation_tokens=24, draft_layers=1, draft_intermediate=64, target_layer_ids=(0, 1),
                 distill_steps=6, distill_anchors=8, ft_steps=3, ft_batch=2, ft_anchors=4, eval_prompts=2,
                 eval_prompt_tokens=32, eval_new_tokens=8, budgets=(16,))
run_mini(sys.argv[1], cfg, progress=False)
"""
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
WALL_CLOCK = {"seconds", "s_per_token", "sr", "timings_s", "machine"}


def _argv(out):
    return [sys.executable, "-c", SCRIPT, str(out)]


def _deterministic_files(out: Path) -> dict[str, bytes]:
    """Every artefact that must be byte-equal across runs (weights, token stream, tokenizer, continuations)."""
    pats = [
        "target/model.safetensors",
        "drafter_init/model.safetensors",
        "*/final/model.safetensors",
        "corpus/train_tokens.npy",
        "corpus/tokenizer/tokenizer.json",
        "data/continuations-*.jsonl",
    ]
    return {str(p.relative_to(out)): p.read_bytes() for pat in pats for p in sorted(out.glob(pat))}


def _scrub(x):
    if isinstance(x, dict):
        return {
            k: _scrub(v) for k, v in x.items() if k not in WALL_CLOCK and not k.endswith("_per_s")
        }
    if isinstance(x, list):
        return [_scrub(v) for v in x]
    return x


def _report(out: Path):
    from exitlaw.paper_repro.mini.table import format_markdown

    res = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert (out / "results.md").read_text(encoding="utf-8") == format_markdown(
        res
    )  # the table of this json
    return _scrub(res)


@pytest.fixture(scope="module")
def mini_reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("mini") / "ref"
    proc = subprocess.run(_argv(out), capture_output=True, text=True, timeout=900, env=ENV)
    assert proc.returncode == 0, proc.stderr
    files = _deterministic_files(out)
    assert len([f for f in files if f.endswith("final/model.safetensors")]) == 4
    return files, _report(out)


@pytest.mark.slow
@pytest.mark.parametrize("sig,case", [(signal.SIGINT, 0), (signal.SIGKILL, 0), (signal.SIGKILL, 1)])
def test_mini_interrupted_then_rerun_equals_an_uninterrupted_run(
    tmp_path, mini_reference, sig, case
):
    ref_files, ref_report = mini_reference
    out = tmp_path / "run"
    delay = float(np.random.default_rng([int(sig), case, 7]).uniform(3.0, 25.0))
    proc = subprocess.Popen(
        _argv(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV
    )
    time.sleep(delay)
    if proc.poll() is None:
        proc.send_signal(sig)
    proc.wait(timeout=120)
    # what the kill left: every artefact under its own name is whole (equal to the reference's) or absent
    left = _deterministic_files(out) if out.exists() else {}
    assert all(data == ref_files.get(name) for name, data in left.items()), sorted(left)
    for final in out.glob("*/final"):
        assert (final / ".complete").is_file() and (final / "config.json").is_file()
    if (out / "drafter_init" / "config.json").is_file():
        assert "drafter_init/model.safetensors" in left
    if (out / "results.json").is_file():
        assert _report(out) == ref_report
    rerun = subprocess.run(_argv(out), capture_output=True, text=True, timeout=900, env=ENV)
    assert rerun.returncode == 0, rerun.stderr
    assert _deterministic_files(out) == ref_files
    assert _report(out) == ref_report
