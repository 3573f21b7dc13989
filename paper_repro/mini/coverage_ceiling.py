"""How deep can tau go on a target? The oracle ceiling ``1 + C*_p(B)`` on the mini target's own contexts.

``C*_p(B)`` is the coverage of the budget-``B`` tree of the target's own top prefixes (docs/design.md
§1.5, :func:`exitlaw.theory.oracle.oracle_tree`): no builder and no drafter can build a tree of larger
coverage, and by the fixed-tree ceiling (§1.3) no exact verifier's expected block length exceeds
``1 + C_p`` of its tree. So the mean of ``1 + C*_p(B)`` over decoding contexts bounds the tau any
drafter can reach on that target at that temperature and budget (with no depth horizon, so the bound
is loose by whatever the drafter's block adds). Contexts are the evaluation prompts followed by the
target's own samples at the judged temperature, cut at fixed positions.
"""

from __future__ import annotations

import json
import time
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from exitlaw.engine.models.checkpoint import load_target
from exitlaw.theory.infra.atomic_io import atomic_write_json
from exitlaw.theory.oracle import coverage_under, oracle_tree


class ModelRows:
    """``p(. | context, prefix)`` at ``temperature`` from a causal LM, memoised per prefix (float64)."""

    def __init__(self, model, context: list[int], temperature: float):
        if not temperature > 0:
            raise ValueError(
                f"the ceiling is a law over prefixes: temperature must be > 0, got {temperature}"
            )
        self.model, self.context, self.temperature = model, list(context), float(temperature)
        self.calls = 0
        self._row = lru_cache(maxsize=None)(self._compute)

    def _compute(self, prefix: tuple[int, ...]) -> np.ndarray:
        self.calls += 1
        ids = torch.tensor([self.context + list(prefix)])
        with torch.inference_mode():
            logits = self.model(input_ids=ids).logits[0, -1].double()
        return torch.softmax(logits / self.temperature, -1).numpy()

    def __call__(self, prefix: tuple[int, ...]) -> np.ndarray:
        return self._row(tuple(prefix))


def sampled_contexts(
    model,
    prompts: list[list[int]],
    *,
    temperature: float,
    new_tokens: int,
    cuts: tuple[int, ...],
    seed: int,
) -> list[list[int]]:
    """Each prompt followed by the target's own ``new_tokens`` samples at ``temperature`` (seed
    ``seed + i`` for prompt ``i``), cut after each of ``cuts`` sampled tokens."""
    if not cuts or max(cuts) > new_tokens or min(cuts) < 0:
        raise ValueError(f"cuts must lie in [0, {new_tokens}], got {cuts}")
    out = []
    for i, prompt in enumerate(prompts):
        gen = torch.Generator().manual_seed(seed + i)
        ids = list(prompt)
        for _ in range(max(cuts)):
            with torch.inference_mode():
                logits = model(input_ids=torch.tensor([ids])).logits[0, -1].double()
            probs = torch.softmax(logits / temperature, -1)
            ids.append(int(torch.multinomial(probs, 1, generator=gen)))
        out += [ids[: len(prompt) + c] for c in cuts]
    return out


def ceiling(model, contexts: list[list[int]], *, temperature: float, budget: int) -> dict:
    """Per context ``1 + C*_p(B)`` at ``temperature``, and the mean top-1 probability and entropy of the
    next-token law there (how peaked the target is)."""
    values, top1, entropy, depth = [], [], [], []
    for ctx in contexts:
        rows = ModelRows(model, ctx, temperature)
        tree = oracle_tree(rows, budget)
        values.append(1.0 + coverage_under(rows, tree))
        depth.append(int(np.max(tree.depth)))
        p = rows(())
        top1.append(float(p.max()))
        entropy.append(float(-(p[p > 0] * np.log(p[p > 0])).sum()))
    return {
        "temperature": temperature,
        "budget": budget,
        "contexts": len(contexts),
        "per_context": values,
        "mean_ceiling": float(np.mean(values)),
        "max_ceiling": float(np.max(values)),
        "share_at_least_5": float(np.mean(np.asarray(values) >= 5.0)),
        "mean_oracle_depth": float(np.mean(depth)),
        "mean_top1": float(np.mean(top1)),
        "mean_entropy_nats": float(np.mean(entropy)),
    }


def run(
    out,
    *,
    target_dir,
    prompt_sets,
    temperatures=(1.0, 0.5),
    budget=64,
    new_tokens=32,
    cuts=(0, 16, 32),
    seed=7000,
) -> dict:
    """The ceiling of the shipped mini target on the evaluation prompts at each temperature; writes
    ``out/coverage_ceiling.json``."""
    model = load_target(target_dir).model.eval()
    prompts = json.loads(Path(prompt_sets).read_text(encoding="utf-8"))["code"]
    res = {
        "target": str(target_dir),
        "prompts": len(prompts),
        "cuts": list(cuts),
        "seed": seed,
        "by_temperature": {},
    }
    for t in temperatures:
        t0 = time.perf_counter()
        ctx = sampled_contexts(
            model, prompts, temperature=t, new_tokens=new_tokens, cuts=cuts, seed=seed
        )
        res["by_temperature"][f"{t:g}"] = {
            **ceiling(model, ctx, temperature=t, budget=budget),
            "seconds": time.perf_counter() - t0,
        }
    Path(out).mkdir(parents=True, exist_ok=True)
    atomic_write_json(Path(out) / "coverage_ceiling.json", res, indent=1)
    return res


if __name__ == "__main__":  # python -m exitlaw.paper_repro.mini.coverage_ceiling OUT
    import sys

    import torch

    torch.set_num_threads(1)
    base = "paper_repro/results/paper_regime"
    run(sys.argv[1], target_dir=f"{base}/base/target", prompt_sets=f"{base}/prompt_sets.json")
