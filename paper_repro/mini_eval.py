"""Mini-scale evaluation: tau and CPU speedup of DDTree decoding for one drafter.

One *cell* = (drafter, domain, budget, temperature, verifier): every prompt of the
domain is decoded with :func:`exitlaw.engine.decode.generate` (DDTree builder,
the given verifier, ``max_new_tokens`` tokens, prompt ``i`` seeded ``seed + i``),
and the cell reports tau = mean output-block length per round including the bonus
(with its standard error over rounds), each prompt's own tau (``per_prompt_tau``: its
rounds' mean block length, the unit of the paired comparisons in :mod:`.mini_stats`),
and the decode seconds per token. The
autoregressive baseline is timed on the same prompts in the same process; SR =
AR seconds per token / speculative seconds per token. At ``T = 0`` every verifier
is greedy (:func:`exitlaw.engine.verifiers.verify`), so the T = 0 cell is run once
and reported for predraw and TEV alike (``"same_as"`` says so).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def eval_cell(target, drafter, prompts: Sequence[Sequence[int]], *, budget: int, temperature: float, verifier: str,
              max_new_tokens: int, seed: int) -> dict:
    """Decode all ``prompts``; tau (mean block length), its standard error, rounds, seconds per token."""
    from exitlaw.engine.decode import DecodeConfig, generate

    lengths: list[int] = []
    per_prompt: list[float] = []
    seconds, tokens = 0.0, 0
    for i, prompt in enumerate(prompts):
        cfg = DecodeConfig(method="ddtree", verifier=verifier, budget=budget, temperature=temperature,
                           max_new_tokens=max_new_tokens, seed=seed + i)
        res = generate(target, drafter, list(prompt), cfg)
        lengths.extend(res.block_lengths)
        per_prompt.append(float(np.mean(res.block_lengths)))
        seconds += res.decode_seconds
        tokens += len(res.tokens)
    arr = np.asarray(lengths, dtype=np.float64)
    se = float(arr.std(ddof=1) / math.sqrt(arr.size)) if arr.size > 1 else float("nan")
    return {"tau": float(arr.mean()), "tau_se": se, "rounds": int(arr.size), "tokens": tokens,
            "seconds": seconds, "s_per_token": seconds / max(tokens, 1), "per_prompt_tau": per_prompt}


def eval_ar(target, prompts: Sequence[Sequence[int]], *, temperature: float, max_new_tokens: int, seed: int) -> dict:
    """Autoregressive baseline on the same prompts: decode seconds per token."""
    from exitlaw.engine.decode import DecodeConfig, generate_ar

    seconds, tokens = 0.0, 0
    for i, prompt in enumerate(prompts):
        cfg = DecodeConfig(method="ar", temperature=temperature, max_new_tokens=max_new_tokens, seed=seed + i)
        res = generate_ar(target, list(prompt), cfg)
        seconds += res.decode_seconds
        tokens += len(res.tokens)
    return {"tokens": tokens, "seconds": seconds, "s_per_token": seconds / max(tokens, 1)}


def cell_key(drafter: str, domain: str, budget: int, temperature: float, verifier: str) -> str:
    return f"{drafter}|{domain}|B{budget}|T{temperature:g}|{verifier}"


def eval_grid(target, drafters: dict, domains: dict, *, budgets: Sequence[int], temperatures: Sequence[float],
              verifiers: Sequence[str], max_new_tokens: int, seed: int, done: dict, on_cell=None,
              progress: bool = True) -> dict:
    """Every cell not already in ``done`` (a dict ``key -> result``, updated in place and passed to ``on_cell``)."""
    todo = []
    for name in drafters:
        for domain in domains:
            for t in temperatures:
                for b in budgets:
                    for v in (verifiers[:1] if t == 0 else verifiers):
                        todo.append((name, domain, b, t, v))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc="eval", unit="cell")
    for name, domain, b, t, v in todo:
        key = cell_key(name, domain, b, t, v)
        if key not in done:
            res = eval_cell(target, drafters[name], domains[domain], budget=b, temperature=t, verifier=v,
                            max_new_tokens=max_new_tokens, seed=seed)
            res.update({"drafter": name, "domain": domain, "budget": b, "temperature": t, "verifier": v})
            done[key] = res
            if on_cell is not None:
                on_cell(key, res)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    for name in drafters:  # T = 0: every verifier is greedy, so later verifiers share the first one's cell
        for domain in domains:
            for b in budgets:
                for v in verifiers[1:]:
                    if 0.0 in [float(t) for t in temperatures]:
                        src = done[cell_key(name, domain, b, 0.0, verifiers[0])]
                        done[cell_key(name, domain, b, 0.0, v)] = {**src, "verifier": v, "same_as": verifiers[0]}
    return done
