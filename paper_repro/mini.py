"""``exitlaw repro mini``: the paper's drafter-objective comparison (Table 2) at CPU scale.

Pipeline (every stage cached under ``OUT``; a rerun skips finished stages and resumes
interrupted training runs; a different configuration needs ``--overwrite``, which moves
the old directory aside, never deletes it):

1. corpus: stdlib code + pydoc prose, by-file split, byte-level BPE (:mod:`.mini_corpus`);
2. target: a small Qwen3-architecture LM trained on the training split (:mod:`.mini_target`);
3. data: prompts cut from training files, continuations sampled from the target (cached);
4. base drafter: a DFlash drafter distilled from the target (token CE only, no trees);
5. objectives: from the base drafter, ``token`` / ``prefix`` / ``exit`` ExitTrain runs with the
   same data, seed, steps, anchors and budget (matched compute: all three build and score trees);
6. evaluation: tau (and CPU speedup over autoregressive decoding) at budgets 32/64/128 and
   T in {0, 1}, with predraw and TEV, on held-out code files and held-out prose topics;
7. ``results.json`` + ``results.md``: the table, seeds, configurations and timings.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from .mini_target import TargetSpec

DRAFTERS = ("base", "token", "prefix", "exit")


@dataclass(frozen=True)
class MiniConfig:
    """Everything that determines the mini reproduction's numbers.

    ``context_init_scale``: the drafter's ``hidden_norm`` weight starts small, so the
    context's values enter the draft layers weakly at first. With the default weight 1,
    a CPU-sized distillation budget (a few hundred steps) left the drafter at the unigram
    distribution at every depth (held-out depth-1 CE 5.9 nats vs 4.7 with 0.05, same
    steps): the ~100-200 context entries swamp the root token before attention has
    learned where to look. It is an initialisation choice only; the architecture and the
    full-context attention are DFlash's.
    """

    preset: str = "full"
    seed: int = 0
    vocab_size: int = 1024
    heldout_fraction: float = 0.05
    tokenizer_docs: int = 400             # training documents the BPE is fitted on
    train_tokens: int = 4_000_000         # cap on the encoded training stream
    target: TargetSpec = field(default_factory=lambda: TargetSpec(
        hidden_size=128, intermediate_size=384, num_layers=4, num_heads=4, num_kv_heads=2, head_dim=32,
        steps=1200, batch_size=16, seq_len=256, lr=3e-3, warmup=30))
    draft_layers: int = 2
    draft_intermediate: int = 384
    block_size: int = 8
    target_layer_ids: tuple[int, ...] = (1, 3)
    context_init_scale: float = 0.05      # initial hidden_norm weight of the drafter's context path (see below)
    prose_share: float = 0.2              # share of training prompts cut from prose topics
    train_prompts: int = 512
    prompt_tokens: int = 64
    continuation_tokens: int = 96
    gen_temperature: float = 1.0
    distill_steps: int = 1200
    distill_batch: int = 4
    distill_anchors: int = 48
    distill_lr: float = 2e-3
    ft_steps: int = 300
    ft_batch: int = 4
    ft_anchors: int = 8
    ft_budget: int = 64
    ft_lr: float = 5e-4
    ft_lam: float = 1.0
    eval_prompts: int = 5
    eval_prompt_tokens: int = 64
    eval_new_tokens: int = 64
    budgets: tuple[int, ...] = (32, 64, 128)
    temperatures: tuple[float, ...] = (0.0, 1.0)
    verifiers: tuple[str, ...] = ("predraw", "tev")

    def to_json(self) -> dict:
        return json.loads(json.dumps(asdict(self)))


QUICK = MiniConfig(
    preset="quick", vocab_size=512, tokenizer_docs=80, train_tokens=300_000,
    target=TargetSpec(hidden_size=64, intermediate_size=128, num_layers=2, num_heads=4, num_kv_heads=2, head_dim=16,
                      steps=120, batch_size=8, seq_len=128, lr=3e-3, warmup=10),
    draft_layers=1, draft_intermediate=128, target_layer_ids=(0, 1), train_prompts=48, prompt_tokens=32, continuation_tokens=48,
    distill_steps=40, distill_batch=4, ft_steps=12, ft_batch=2, ft_anchors=4, eval_prompts=2,
    eval_prompt_tokens=32, eval_new_tokens=24)

PRESETS = {"full": MiniConfig(), "quick": QUICK}


def _write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


def prepare_out(out: Path, cfg: MiniConfig, overwrite: bool) -> None:
    """Create ``out`` or check that it holds a run of the same configuration."""
    marker = out / "mini_config.json"
    if marker.is_file():
        old = json.loads(marker.read_text(encoding="utf-8"))
        if old == cfg.to_json():
            return
        if not overwrite:
            diff = sorted(k for k in old if old[k] != cfg.to_json().get(k))
            raise FileExistsError(f"{out} holds a mini run with another configuration (differs in {diff}); "
                                  "pass --overwrite to move it aside, or choose another --out")
    elif out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out} exists and is not a mini run; choose another --out or pass --overwrite")
    if out.exists() and any(out.iterdir()):
        aside = out.with_name(f"{out.name}.old-{time.strftime('%Y%m%d-%H%M%S')}")
        out.rename(aside)
        print(f"moved the previous run aside to {aside}")
    out.mkdir(parents=True, exist_ok=True)
    _write_json(marker, cfg.to_json())


def run_mini(out: str | Path, cfg: MiniConfig, *, overwrite: bool = False, progress: bool = True) -> dict:
    """Run (or resume) the whole pipeline; returns the results dict also written to ``out/results.json``."""
    import numpy as np
    import torch

    from exitlaw.engine.checkpoint import load_pair, load_target, save_drafter
    from exitlaw.engine.dflash import DFlashConfig, DFlashDrafter
    from exitlaw.engine.train_data import cached_sequences, target_fingerprint
    from exitlaw.engine.train_loop import TrainConfig, train

    from . import mini_corpus as mc
    from .mini_eval import eval_ar, eval_grid
    from .mini_target import heldout_loss, save_target, train_target

    out = Path(out)
    prepare_out(out, cfg, overwrite)
    timings: dict[str, float] = json.loads((out / "timings.json").read_text()) if (out / "timings.json").is_file() else {}

    def stage(name: str, t0: float) -> None:
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - t0
        _write_json(out / "timings.json", timings)

    # 1. corpus ---------------------------------------------------------------------------------
    t0 = time.perf_counter()
    split = mc.make_split(heldout_fraction=cfg.heldout_fraction, seed=cfg.seed)
    corpus = out / "corpus"
    corpus.mkdir(exist_ok=True)
    _write_json(corpus / "split.json", split.to_json())
    code_train, prose_train = split.code_texts("train"), split.prose_texts("train")
    if (corpus / "tokenizer" / "tokenizer.json").is_file():
        tok = mc.load_tokenizer(corpus / "tokenizer")
    else:
        rng = np.random.default_rng(cfg.seed)
        docs = [code_train[i] for i in rng.permutation(len(code_train))[: cfg.tokenizer_docs]] + prose_train
        tok = mc.train_tokenizer(docs, cfg.vocab_size, corpus / "tokenizer")
    tokens_path = corpus / "train_tokens.npy"
    if tokens_path.is_file():
        train_tokens = np.load(tokens_path)
    else:
        rng = np.random.default_rng([cfg.seed, 1])
        docs = code_train + prose_train
        order = rng.permutation(len(docs))
        train_tokens = mc.encode_documents(tok, [docs[i] for i in order], max_tokens=cfg.train_tokens)
        np.save(tokens_path, train_tokens)
    stage("corpus", t0)

    # 2. target ---------------------------------------------------------------------------------
    t0 = time.perf_counter()
    tdir = out / "target"
    if not (tdir / "mini_target.json").is_file():
        model, log = train_target(train_tokens, len(tok), cfg.target, cfg.seed, progress=progress)
        held_code = mc.encode_documents(tok, split.code_texts("heldout"), max_tokens=200_000)
        held_prose = mc.encode_documents(tok, split.prose_texts("heldout"), max_tokens=200_000)
        info = {"spec": asdict(cfg.target), "seed": cfg.seed, "train_tokens": int(train_tokens.size),
                "final_train_loss": float(np.mean([r["loss"] for r in log[-20:]])),
                "heldout_code_loss": heldout_loss(model, held_code, 128, 16, cfg.seed),
                "heldout_prose_loss": heldout_loss(model, held_prose, 128, 16, cfg.seed), "log": log}
        save_target(model, tok, tdir, info)
        del model
    stage("target", t0)

    # 3. continuations ------------------------------------------------------------------------
    t0 = time.perf_counter()
    target = load_target(tdir, layer_ids=cfg.target_layer_ids)
    n_prose = int(round(cfg.train_prompts * cfg.prose_share))
    prompts = (mc.sample_prompts(tok, code_train, count=cfg.train_prompts - n_prose,
                                 prompt_tokens=cfg.prompt_tokens, seed=cfg.seed + 11)
               + mc.sample_prompts(tok, prose_train, count=n_prose, prompt_tokens=cfg.prompt_tokens, seed=cfg.seed + 12))
    data = cached_sequences(target, target_fingerprint(tdir), prompts, out / "data",
                            max_new_tokens=cfg.continuation_tokens, temperature=cfg.gen_temperature, seed=cfg.seed,
                            batch_size=64)
    stage("continuations", t0)

    # 4. base drafter (distillation) ------------------------------------------------------------
    t0 = time.perf_counter()
    hidden = target.model.config.hidden_size
    init_dir = out / "drafter_init"
    if not (init_dir / "config.json").is_file():
        dcfg = DFlashConfig(hidden_size=hidden, intermediate_size=cfg.draft_intermediate,
                            num_hidden_layers=cfg.draft_layers,
                            num_attention_heads=target.model.config.num_attention_heads,
                            num_key_value_heads=target.model.config.num_key_value_heads,
                            head_dim=target.model.config.head_dim, vocab_size=len(tok), block_size=cfg.block_size,
                            mask_token_id=tok.mask_token_id, target_layer_ids=tuple(cfg.target_layer_ids),
                            num_target_layers=target.model.config.num_hidden_layers, rope_theta=10000.0)
        torch.manual_seed(cfg.seed + 2)
        drafter = DFlashDrafter(dcfg)
        with torch.no_grad():  # small context path at init: see MiniConfig's docstring
            drafter.hidden_norm.weight.fill_(cfg.context_init_scale)
        save_drafter(drafter, init_dir)
    distill = TrainConfig(objective="token", lam=0.0, budget=cfg.ft_budget, steps=cfg.distill_steps,
                          batch_size=cfg.distill_batch, anchors_per_seq=cfg.distill_anchors, lr=cfg.distill_lr,
                          warmup_steps=max(1, cfg.distill_steps // 20), checkpoint_every=max(1, cfg.distill_steps // 4),
                          seed=cfg.seed, score_trees=False)
    base_final = _train_stage(out / "drafter_base", tdir, init_dir, data, distill, progress, load_pair, train)
    stage("distill", t0)

    # 5. three objectives, matched compute ------------------------------------------------------
    finals = {"base": base_final}
    for objective in ("token", "prefix", "exit"):
        t0 = time.perf_counter()
        ft = TrainConfig(objective=objective, lam=cfg.ft_lam, budget=cfg.ft_budget, steps=cfg.ft_steps,
                         batch_size=cfg.ft_batch, anchors_per_seq=cfg.ft_anchors, lr=cfg.ft_lr,
                         warmup_steps=max(1, cfg.ft_steps // 20), checkpoint_every=max(1, cfg.ft_steps // 3),
                         seed=cfg.seed + 100, score_trees=True)
        finals[objective] = _train_stage(out / f"ft_{objective}", tdir, base_final, data, ft, progress, load_pair, train)
        stage(f"train_{objective}", t0)

    # 6. evaluation -----------------------------------------------------------------------------
    t0 = time.perf_counter()
    domains = {"code": mc.sample_prompts(tok, split.code_texts("heldout"), count=cfg.eval_prompts,
                                         prompt_tokens=cfg.eval_prompt_tokens, seed=cfg.seed + 21),
               "prose": mc.sample_prompts(tok, split.prose_texts("heldout"), count=cfg.eval_prompts,
                                          prompt_tokens=cfg.eval_prompt_tokens, seed=cfg.seed + 22)}
    from exitlaw.engine.checkpoint import load_drafter

    drafters = {name: load_drafter(finals[name], dtype=target.dtype) for name in DRAFTERS}
    cells_path = out / "eval" / "cells.jsonl"
    cells_path.parent.mkdir(exist_ok=True)
    done = {}
    if cells_path.is_file():
        for line in cells_path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            done[rec["key"]] = rec["result"]

    def on_cell(key, res):
        with cells_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"key": key, "result": res}) + "\n")

    eval_grid(target, drafters, domains, budgets=cfg.budgets, temperatures=cfg.temperatures, verifiers=cfg.verifiers,
              max_new_tokens=cfg.eval_new_tokens, seed=cfg.seed + 1000, done=done, on_cell=on_cell, progress=progress)
    ar_path = out / "eval" / "ar.json"
    ar = json.loads(ar_path.read_text()) if ar_path.is_file() else {}
    for domain, prompts_d in domains.items():
        for t in cfg.temperatures:
            key = f"{domain}|T{t:g}"
            if key not in ar:
                ar[key] = eval_ar(target, prompts_d, temperature=t, max_new_tokens=cfg.eval_new_tokens,
                                  seed=cfg.seed + 1000)
                _write_json(ar_path, ar)
    stage("eval", t0)

    # 7. table ----------------------------------------------------------------------------------
    from .mini_table import build_results, format_markdown

    results = build_results(cfg, out, done, ar, timings)
    _write_json(out / "results.json", results)
    (out / "results.md").write_text(format_markdown(results), encoding="utf-8")
    return results


def _train_stage(run_dir: Path, tdir: Path, init: Path, data, tcfg, progress: bool, load_pair, train) -> Path:
    """One drafter training run into ``run_dir`` (resumed if interrupted); returns its ``final`` drafter."""
    final = run_dir / "final"
    if (final / "model.safetensors").is_file():
        return final
    target, drafter = load_pair(tdir, init)
    resume = (run_dir / "config.json").is_file()
    return train(target, drafter, data, tcfg, run_dir, resume=resume, progress=progress,
                 run_info={"init": str(init), "target": str(tdir)})


def config_for(preset: str, **overrides) -> MiniConfig:
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    return replace(PRESETS[preset], **overrides)
