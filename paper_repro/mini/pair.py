"""A `repro mini` run as a model pair and prompts for other benchmarks (``exitlaw bench ddtree``):
the run's target and distilled base drafter, its held-out code prompts, or the quick preset's pair
trained on the spot."""

from __future__ import annotations

import json
from pathlib import Path

from exitlaw.engine.models.checkpoint import load_target
from exitlaw.paper_repro.mini import corpus as mc
from exitlaw.paper_repro.mini import pipeline as mp


def mini_pair(run: str | Path) -> tuple[Path, Path]:
    """``(target, base drafter)`` folders of a finished `repro mini` run."""
    run = Path(run)
    return run / "target", run / "drafter_base" / "final"


def mini_prompts(run: str | Path, count: int, tokens: int) -> list[list[int]]:
    """Held-out code prompts of a `repro mini` run (its corpus split and tokenizer, its seed), as its
    eval draws them."""
    run = Path(run)
    cfg_file = run / "mini_config.json"
    if not cfg_file.is_file() or not (run / "corpus" / "tokenizer").is_dir():
        raise ValueError(
            f"{run} is not a `repro mini` output (no mini_config.json or corpus/tokenizer); "
            "pass --prompts FILE.json"
        )
    cfg = json.loads(cfg_file.read_text())
    split = mc.make_split(heldout_fraction=cfg["heldout_fraction"], seed=cfg["seed"])
    tok = mc.load_tokenizer(run / "corpus" / "tokenizer")
    return mc.sample_prompts(
        tok, split.code_texts("heldout"), count=count, prompt_tokens=tokens, seed=cfg["seed"] + 21
    )


def quick_pair(work: str | Path) -> tuple[Path, Path]:
    """Train the quick preset's corpus, target and distilled base drafter into ``work`` (not its
    objectives or eval); ``(target, base drafter)`` folders."""
    work = Path(work)
    cfg = mp.config_for("quick")
    mp.prepare_out(work, cfg, overwrite=False)
    corpus = mp.stage_corpus(work, cfg)
    tdir = mp.stage_target(work, cfg, corpus, False)
    data = mp.stage_data(work, cfg, corpus, load_target(tdir, layer_ids=cfg.target_layer_ids), tdir)
    base = mp.stage_base_drafter(
        work, cfg, load_target(tdir, layer_ids=cfg.target_layer_ids), tdir, data, False
    )
    return tdir, base
