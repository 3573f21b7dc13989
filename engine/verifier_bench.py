"""``exitlaw verifier-bench``: verifier-stage latency on the same realised trees.

For each budget ``B`` we build a few DDTree trees (:func:`build_ddtree`) from
draft rows that *resemble the target* -- every depth has a handful of hot tokens
that the target also favours -- so paths get accepted and the trees are deep
with many internal nodes, as real drafters produce. On every tree we time, from
the outside, the verifier stage (decision + bonus + commit indices, i.e. one
:func:`verify` call up to the returned path; the target forward and the tree's
device copy are excluded) for predraw, residual and TEV, and the **floor**: one
``logsumexp`` over the rows of the tree's ``K`` internal nodes plus one float64
categorical draw from a single row and one host transfer -- the least a
verifier that needs every edge probability ``a(u)`` (as TEV does) has to touch. Medians (and minima, robust to load spikes on a
shared machine) over trees and repeats; nothing asserted.

Reading the numbers: TEV and the floor read the ``K`` internal rows; sequential
residual reads only the rows on the accepted path (``depth(exit) + 1`` of them)
but syncs with the host once per level, and predraw draws from all ``N`` rows.
On a CPU, where rows are read one core at a time, residual is therefore the
cheapest; TEV's fixed shape (no data-dependent loop, one host sync) is aimed at
GPUs, where reading K rows costs little more than reading one.
On a shared CPU prefer ``--threads 1``: intra-op threads stall on busy cores.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from .builders import build_ddtree
from .device_tree import DeviceTree, to_device_tree
from .verifiers import VerifierGenerators, _draw_logits, verify

BENCH_KINDS = ("predraw", "residual", "tev")
HOT = 4  # hot tokens per depth shared by drafter and target


@dataclass(frozen=True)
class BenchCase:
    budget: int
    tree: DeviceTree
    logits: torch.Tensor  # [N, V] target logits, on the device

    @property
    def internal(self) -> int:
        return int(self.tree.internal.numel())


def make_cases(budget: int, vocab: int, *, trees: int, depth: int, device: torch.device, dtype: torch.dtype,
               seed: int) -> list[BenchCase]:
    """Trees built by DDTree from draft rows with ``HOT`` hot tokens per depth; target rows favour the
    same tokens (perturbed) at the next depth, so the trees are deep and their paths get accepted."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(trees):
        hot = torch.randint(0, vocab, (depth + 1, HOT), generator=g)
        boost = torch.tensor([15.0, 13.5, 12.5, 12.0])
        draft = torch.randn(depth, vocab, generator=g)
        draft.scatter_(1, hot[1:], boost.expand(depth, HOT) + torch.randn(depth, HOT, generator=g) * 0.5)
        tree, logq = build_ddtree(torch.log_softmax(draft, -1), budget, root_token=int(hot[0, 0]))
        d = torch.tensor(tree.depth)
        logits = torch.randn(tree.num_nodes, vocab, generator=g)
        nxt = hot[torch.clamp(d + 1, max=depth)]  # hot tokens of the next depth, [N, HOT]
        logits.scatter_(1, nxt, boost.expand(tree.num_nodes, HOT) + torch.randn(tree.num_nodes, HOT, generator=g) * 0.7)
        out.append(BenchCase(budget, to_device_tree(tree, device, logq), logits.to(device=device, dtype=dtype)))
    return out


def floor_stage(case: BenchCase, gens: VerifierGenerators, temperature: float = 1.0) -> int:
    """The floor: ``logsumexp`` of the K internal rows (at temperature ``T``) + one float64 draw from one
    row + one transfer."""
    rows = case.logits.index_select(0, case.tree.internal).float()
    lse = torch.logsumexp(rows if temperature == 1.0 else rows * (1.0 / temperature), dim=-1)
    z = case.logits[-1].to(torch.float64, copy=True)
    y, _ = _draw_logits(z if temperature == 1.0 else z.mul_(1.0 / temperature), gens.bonus)
    return int(torch.stack([lse[0].to(torch.float64), y.to(torch.float64)])[1])


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _time_interleaved(fns: dict[str, Callable[[], Any]], device: torch.device, repeats: int) -> dict[str, list[float]]:
    """Milliseconds per call; the stages alternate call by call, so load drifts hit all of them alike."""
    for fn in fns.values():  # warm-up
        fn()
    _sync(device)
    out: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            _sync(device)
            out[k].append((time.perf_counter() - t0) * 1e3)
    return out


def run_verifier_bench(budgets=(32, 64, 128), vocab: int = 151936, *, device: str = "cpu", trees: int = 3,
                       repeats: int = 15, depth: int = 15, temperature: float = 1.0, dtype: str = "float32",
                       kinds=BENCH_KINDS, seed: int = 0) -> dict[str, Any]:
    dev = torch.device(device)
    dt = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}.get(dtype)
    if dt is None:
        raise ValueError(f"dtype must be float32, bfloat16 or float16, got {dtype!r}")
    for k in kinds:
        if k not in BENCH_KINDS:
            raise ValueError(f"unknown verifier {k!r} for the bench; choose from {', '.join(BENCH_KINDS)}")
    rows = []
    for b in budgets:
        cases = make_cases(int(b), int(vocab), trees=trees, depth=depth, device=dev, dtype=dt, seed=seed + int(b))
        gens = VerifierGenerators(seed, dev)
        ms: dict[str, list[float]] = {k: [] for k in (*kinds, "floor")}
        lengths: dict[str, list[int]] = {k: [] for k in kinds}
        for case in cases:
            fns = {"floor": lambda c=case: floor_stage(c, gens, temperature)}
            for k in kinds:
                fns[k] = lambda c=case, k=k: lengths[k].append(
                    len(verify(k, c.tree, c.logits, temperature, gens).path_nodes))
            for k, v in _time_interleaved(fns, dev, repeats).items():
                ms[k] += v
        med = {k: statistics.median(v) for k, v in ms.items()}
        best = {k: min(v) for k, v in ms.items()}
        row = {"budget": int(b), "nodes": [c.tree.num_nodes for c in cases], "internal": [c.internal for c in cases],
               "max_depth": [c.tree.tree.max_depth for c in cases],
               "mean_block_length": {k: statistics.fmean(v) for k, v in lengths.items()},
               "median_ms": med, "min_ms": best}
        if "tev" in med:
            row["tev_over_floor"] = med["tev"] / med["floor"]
            row["tev_over_floor_min"] = best["tev"] / best["floor"]  # robust to load spikes on a shared machine
            for k in kinds:
                if k != "tev":
                    row[f"tev_over_{k}"] = med["tev"] / med[k]
        rows.append(row)
    config = {"budgets": list(map(int, budgets)), "vocab": int(vocab), "device": str(dev), "trees": trees,
              "repeats": repeats, "depth": depth, "temperature": temperature, "dtype": dtype, "kinds": list(kinds),
              "seed": seed, "torch": torch.__version__, "threads": torch.get_num_threads()}
    return {"config": config, "rows": rows, "text": format_bench(rows, config)}


def format_bench(rows: list[dict[str, Any]], config: dict[str, Any]) -> str:
    kinds = config["kinds"]
    head = (f"verifier stage (decision + bonus + commit indices; target forward excluded), median ms, "
            f"V={config['vocab']}, {config['dtype']}, T={config['temperature']}, {config['device']}, "
            f"{config['threads']} threads, {config['trees']} trees x {config['repeats']} repeats")
    cols = f"{'B':>4} {'K':>9} {'depth':>6} {'floor':>8} " + " ".join(f"{k:>9}" for k in kinds)
    cols += f" {'TEV/floor':>9}" + "".join(f" {'TEV/' + k:>12}" for k in kinds if k != "tev")
    cols += f" {'TEV/floor(min)':>14}" if "tev" in kinds else ""
    lines = [head, cols]
    for r in rows:
        m = r["median_ms"]
        k_rng = f"{min(r['internal'])}-{max(r['internal'])}"
        line = f"{r['budget']:>4} {k_rng:>9} {max(r['max_depth']):>6} {m['floor']:>8.2f} "
        line += " ".join(f"{m[k]:>9.2f}" for k in kinds)
        if "tev_over_floor" in r:
            line += f" {r['tev_over_floor']:>9.2f}" + "".join(f" {r['tev_over_' + k]:>12.2f}" for k in kinds if k != "tev")
            line += f" {r['tev_over_floor_min']:>14.2f}"
        lines.append(line)
    return "\n".join(lines)


__all__ = ["run_verifier_bench", "make_cases", "floor_stage", "BenchCase"]
