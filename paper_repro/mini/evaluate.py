"""Mini-scale evaluation: tau and CPU speedup of DDTree decoding for one drafter.

One *cell* = (drafter, domain, budget, temperature, verifier): every prompt of the
domain is decoded with :func:`exitlaw.engine.decode.loop.generate` (DDTree builder,
the given verifier, ``max_new_tokens`` tokens, prompt ``i`` seeded ``seed + i``),
and the cell reports tau = mean output-block length per round including the bonus
(with its standard error over rounds), each prompt's own tau (``per_prompt_tau``: its
rounds' mean block length, the unit of the paired comparisons in :mod:`.mini_stats`),
and the decode seconds per token. The
autoregressive baseline is timed on the same prompts in the same process; SR =
AR seconds per token / speculative seconds per token. At ``T = 0`` every verifier
is greedy (:func:`exitlaw.engine.decode.dispatch.verify`), so the T = 0 cell is run once
and reported for predraw and TEV alike (``"same_as"`` says so).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from tqdm import tqdm

from exitlaw.engine.decode.loop import DecodeConfig, generate, generate_ar, trace_round
from exitlaw.theory.sampling_settings import SamplingSettings


def coverage(parent: np.ndarray, edge_prob: np.ndarray) -> float:
    """``C_p = sum_{v != root} P(v)``, ``P(v) = P(parent) a(v)`` (nodes in topological order, docs/design.md §1.2)."""
    prefix = np.ones(len(parent))
    for v in range(1, len(parent)):
        prefix[v] = prefix[parent[v]] * edge_prob[v]
    return float(prefix[1:].sum())


class RoundLaws:
    """Per round of one decode: ``1 + C_p`` of the realised tree at the decode temperature (the
    Rao-Blackwellised block length: an exact saturating verifier's expected block length on that tree;
    at T = 0 the block length itself), ``1 + C_p`` at the scoring temperature ``T_s`` (the law a
    trainer optimises), and the tree's depth."""

    def __init__(self, temperature: float, scoring_temperature: float):
        self.temperature, self.scoring_temperature = temperature, scoring_temperature
        self.rb: list[float] = []
        self.ceiling_ts: list[float] = []
        self.depth: list[int] = []

    def __call__(self, rec) -> None:
        here = trace_round(rec, SamplingSettings(self.temperature))
        parent = here.tree.parent
        self.rb.append(1.0 + coverage(parent, here.edge_prob))
        at_ts = (
            here
            if self.scoring_temperature == self.temperature
            else trace_round(rec, SamplingSettings(self.scoring_temperature))
        )
        self.ceiling_ts.append(1.0 + coverage(parent, at_ts.edge_prob))
        self.depth.append(int(here.tree.depth.max()))


def eval_cell(
    target,
    drafter,
    prompts: Sequence[Sequence[int]],
    *,
    budget: int,
    temperature: float,
    verifier: str,
    max_new_tokens: int,
    seed: int,
    scoring_temperature: float | None = None,
) -> dict:
    """Decode all ``prompts``; tau (mean block length), its standard error, rounds, seconds per token.

    With ``scoring_temperature`` also, per prompt: the Rao-Blackwellised tau (``per_prompt_rb_tau``),
    ``1 + C_p`` at ``T_s`` (``per_prompt_ceiling_ts``) and the mean tree depth (``per_prompt_depth``),
    each the mean over the prompt's rounds (:class:`RoundLaws`).
    """
    lengths: list[int] = []
    per_prompt: list[float] = []
    laws: list[RoundLaws] = []
    seconds, tokens = 0.0, 0
    for i, prompt in enumerate(prompts):
        cfg = DecodeConfig(
            method="ddtree",
            verifier=verifier,
            budget=budget,
            settings=SamplingSettings(temperature),
            max_new_tokens=max_new_tokens,
            seed=seed + i,
        )
        on_round = (
            None if scoring_temperature is None else RoundLaws(temperature, scoring_temperature)
        )
        res = generate(target, drafter, list(prompt), cfg, on_round=on_round)
        lengths.extend(res.block_lengths)
        per_prompt.append(res.tau)
        seconds += res.decode_seconds
        tokens += res.decode_tokens
        if on_round is not None:
            laws.append(on_round)
    arr = np.asarray(lengths, dtype=np.float64)
    se = float(arr.std(ddof=1) / math.sqrt(arr.size)) if arr.size > 1 else float("nan")
    out = {
        "tau": float(arr.mean()),
        "tau_se": se,
        "rounds": int(arr.size),
        "tokens": tokens,
        "seconds": seconds,
        "s_per_token": seconds / max(tokens, 1),
        "per_prompt_tau": per_prompt,
    }
    if laws:
        out.update(
            {
                "scoring_temperature": scoring_temperature,
                "per_prompt_rb_tau": [float(np.mean(r.rb)) for r in laws],
                "per_prompt_ceiling_ts": [float(np.mean(r.ceiling_ts)) for r in laws],
                "per_prompt_depth": [float(np.mean(r.depth)) for r in laws],
                "rb_tau": float(np.mean([x for r in laws for x in r.rb])),
                "ceiling_ts": float(np.mean([x for r in laws for x in r.ceiling_ts])),
                "tree_depth": float(np.mean([x for r in laws for x in r.depth])),
            }
        )
    return out


def eval_ar(
    target, prompts: Sequence[Sequence[int]], *, temperature: float, max_new_tokens: int, seed: int
) -> dict:
    """Autoregressive baseline on the same prompts: decode seconds per token."""
    seconds, tokens = 0.0, 0
    for i, prompt in enumerate(prompts):
        cfg = DecodeConfig(
            method="ar",
            settings=SamplingSettings(temperature),
            max_new_tokens=max_new_tokens,
            seed=seed + i,
        )
        res = generate_ar(target, list(prompt), cfg)
        seconds += res.decode_seconds
        tokens += res.decode_tokens
    return {"tokens": tokens, "seconds": seconds, "s_per_token": seconds / max(tokens, 1)}


def cell_key(drafter: str, domain: str, budget: int, temperature: float, verifier: str) -> str:
    return f"{drafter}|{domain}|B{budget}|T{temperature:g}|{verifier}"


def eval_grid(
    target,
    drafters: dict,
    domains: dict,
    *,
    budgets: Sequence[int],
    temperatures: Sequence[float],
    verifiers: Sequence[str],
    max_new_tokens: int,
    seed: int,
    done: dict,
    on_cell=None,
    progress: bool = True,
) -> dict:
    """Every cell not already in ``done`` (a dict ``key -> result``, updated in place and passed to ``on_cell``)."""
    todo = []
    for name in drafters:
        for domain in domains:
            for t in temperatures:
                for b in budgets:
                    for v in verifiers[:1] if t == 0 else verifiers:
                        todo.append((name, domain, b, t, v))
    bar = None
    if progress:
        bar = tqdm(total=len(todo), desc="eval", unit="cell")
    for name, domain, b, t, v in todo:
        key = cell_key(name, domain, b, t, v)
        if key not in done:
            res = eval_cell(
                target,
                drafters[name],
                domains[domain],
                budget=b,
                temperature=t,
                verifier=v,
                max_new_tokens=max_new_tokens,
                seed=seed,
            )
            res.update(
                {"drafter": name, "domain": domain, "budget": b, "temperature": t, "verifier": v}
            )
            done[key] = res
            if on_cell is not None:
                on_cell(key, res)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    for (
        name
    ) in drafters:  # T = 0: every verifier is greedy, so later verifiers share the first one's cell
        for domain in domains:
            for b in budgets:
                for v in verifiers[1:]:
                    if 0.0 in [float(t) for t in temperatures]:
                        src = done[cell_key(name, domain, b, 0.0, verifiers[0])]
                        done[cell_key(name, domain, b, 0.0, v)] = {
                            **src,
                            "verifier": v,
                            "same_as": verifiers[0],
                        }
    return done
