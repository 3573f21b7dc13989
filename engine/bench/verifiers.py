"""``exitlaw bench verifiers``: the verifier stage (decision + KV-cache commit) on the same realised trees.

For each budget ``B`` we build a few DDTree trees (:func:`build_ddtree`) from
draft rows that *resemble the target* -- every depth has a handful of hot tokens
that the target also favours -- so paths get accepted and the trees are deep
with many internal nodes, as real drafters produce. On every tree we time, from
the outside, **the paper's interval** (docs/design.md §1.12, Metrics: decision + bonus +
cache commit, the target's tree forward excluded) for predraw, residual and TEV:
one :func:`verify` call followed by a real :meth:`TargetModel.commit` of the
returned path on a real ``DynamicCache`` whose layers hold cache-shaped K/V
tensors (``KVShape``: Qwen3-4B's 36 layers x 8 KV heads x head dim 128 by default,
``context`` committed positions plus the ``B + 1`` tree entries a tree forward
appends). The cache is refilled *untimed* before every call: each layer's K/V
become fresh views of ``context + B + 1`` positions of a preallocated buffer,
the state a tree forward leaves (the buffer's contents are stand-ins; the
commit's gathers, copies and crops are the real ones). ``commit=False`` times the
decision alone.

Beside them two more stages (docs/design.md §1.6, §1.12):

* ``predraw_multinomial`` -- **DDTree's own predraw path**: a float32 ``softmax`` of all ``N``
  rows and ``torch.multinomial(probs, 1)`` (on a CPU it draws ``N V`` random numbers), one transfer,
  the host walk and the commit. Same law as ``predraw``, which is **exitlaw's fast predraw** as the
  engine runs it (:func:`exitlaw.engine.decode.verifiers.predraw_rows`: one float64 inverse-CDF
  uniform per row). A TEV saving is quoted against both; only the fast one is exitlaw's predraw.
* ``floor`` -- **TEV's floor**: the ``logsumexp`` of the ``K`` internal rows by TEV's own function
  (:func:`~exitlaw.engine.decode.verifiers.tev._internal_logsumexp`, without the residual masses), one
  host transfer and the commit of the root alone: a strict subset of TEV's work, so TEV cannot beat
  it. It is a floor for TEV only: residual reads only the rows on its path and may well be faster.

Every stage alternates call by call on the same tree (so load drifts hit all of
them alike); each row keeps the per-call times (``samples_ms``, aligned across
stages: entry ``i`` of every stage is the same tree and repeat), their medians
and minima, and ``tev_over_predraw`` = median TEV / median predraw. The ledger
bootstraps its interval from the paired samples. Nothing is asserted here.

Reading the numbers: TEV and its floor read the ``K`` internal rows; sequential
residual reads only the rows on the accepted path but syncs with the host once
per level, and both predraws draw from all ``N`` rows (the multinomial path with ``V``
random numbers per row on a CPU, which is why TEV's saving against it is far larger
than against the fast predraw). TEV's fixed shape (no
data-dependent loop, one host sync) is aimed at GPUs, where reading K rows costs
little more than reading one. On a shared CPU prefer ``--threads 1``.
"""

from __future__ import annotations

from functools import partial

import statistics
from dataclasses import asdict, dataclass
from typing import Any, Callable

import torch

from exitlaw.theory.registry import ENGINE, verifier_names

from exitlaw.engine.builders.single import build_ddtree
from exitlaw.engine.decode.device_tree import DeviceTree, to_device_tree
from exitlaw.engine.models.target import TargetModel
from exitlaw.engine.decode.timing import interleaved_ms
from exitlaw.engine.decode.dispatch import verify
from exitlaw.engine.decode.verifiers import VerifierGenerators
from exitlaw.engine.decode.verifiers.tev import _internal_logsumexp
from exitlaw.engine.decode.verifiers.walk import _walk

BENCH_KINDS = verifier_names(implemented=ENGINE, sampling=True)  # predraw, residual, tev
HOT = 4  # hot tokens per depth shared by drafter and target


@dataclass(frozen=True)
class BenchCase:
    budget: int
    tree: DeviceTree
    logits: torch.Tensor  # [N, V] target logits, on the device

    @property
    def internal(self) -> int:
        return int(self.tree.internal.numel())


@dataclass(frozen=True)
class KVShape:
    """The K/V cache the stage commits into: ``layers`` x ``[1, kv_heads, context + N, head_dim]`` (default: Qwen3-4B)."""

    layers: int = 36
    kv_heads: int = 8
    head_dim: int = 128
    context: int = 256

    def __post_init__(self) -> None:
        for name in ("layers", "kv_heads", "head_dim", "context"):
            if getattr(self, name) < 1:
                raise ValueError(f"KV shape {name} must be >= 1, got {getattr(self, name)}")


class StandInCache:
    """A real ``DynamicCache`` whose layers are refilled (untimed) with views of ``context + N`` positions."""

    def __init__(self, shape: KVShape, nodes: int, device: torch.device, dtype: torch.dtype):
        from transformers import DynamicCache

        self.start, self.nodes = shape.context, nodes
        n_pos = shape.context + nodes
        g = torch.Generator().manual_seed(0)
        # one buffer per layer: [1, kv_heads, context + N, head_dim]
        self.buffers = [
            (
                torch.randn(1, shape.kv_heads, n_pos, shape.head_dim, generator=g).to(
                    device, dtype
                ),
                torch.randn(1, shape.kv_heads, n_pos, shape.head_dim, generator=g).to(
                    device, dtype
                ),
            )
            for _ in range(shape.layers)
        ]
        self.cache = DynamicCache()
        for i, (k, v) in enumerate(self.buffers):
            self.cache.update(k, v, i)

    def refill(self) -> None:
        """The state a tree forward leaves: ``context`` committed positions then the N tree entries."""
        for layer, (k, v) in zip(self.cache.layers, self.buffers):
            layer.keys, layer.values = k[..., :, :], v[..., :, :]

    def commit(self, path_nodes) -> None:
        TargetModel.commit(self.cache, self.start, path_nodes)
        if self.cache.get_seq_length() != self.start + len(
            path_nodes
        ):  # cheap shape check, no data sync
            raise AssertionError("commit left the cache at the wrong length")


def make_cases(
    budget: int,
    vocab: int,
    *,
    trees: int,
    depth: int,
    device: torch.device,
    dtype: torch.dtype,
    seed: int,
) -> list[BenchCase]:
    """Trees built by DDTree from draft rows with ``HOT`` hot tokens per depth; target rows favour the
    same tokens (perturbed) at the next depth, so the trees are deep and their paths get accepted."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(trees):
        hot = torch.randint(0, vocab, (depth + 1, HOT), generator=g)
        boost = torch.tensor([15.0, 13.5, 12.5, 12.0])
        draft = torch.randn(depth, vocab, generator=g)
        draft.scatter_(
            1, hot[1:], boost.expand(depth, HOT) + torch.randn(depth, HOT, generator=g) * 0.5
        )
        tree, logq = build_ddtree(torch.log_softmax(draft, -1), budget, root_token=int(hot[0, 0]))
        d = torch.tensor(tree.depth)
        logits = torch.randn(tree.num_nodes, vocab, generator=g)
        nxt = hot[torch.clamp(d + 1, max=depth)]  # hot tokens of the next depth, [N, HOT]
        logits.scatter_(
            1,
            nxt,
            boost.expand(tree.num_nodes, HOT) + torch.randn(tree.num_nodes, HOT, generator=g) * 0.7,
        )
        out.append(
            BenchCase(
                budget, to_device_tree(tree, device, logq), logits.to(device=device, dtype=dtype)
            )
        )
    return out


FLOOR_OF = "tev"  # the verifier whose floor ``floor_stage`` is (a strict subset of its work)
MULTINOMIAL = "predraw_multinomial"  # DDTree's predraw: float32 softmax + torch.multinomial per row


def floor_stage(case: BenchCase, gens: VerifierGenerators, temperature: float = 1.0) -> int:
    """TEV's floor: TEV's own ``logsumexp`` of the K internal rows (at temperature ``T``, without the
    residual masses) + one transfer; a strict subset of :func:`verify_tev`'s work (docs/design.md §1.6)."""
    lse = _internal_logsumexp(case.logits, case.tree.internal, 1.0 / temperature)
    return int(lse[:1].tolist()[0] > float("-inf"))


def multinomial_predraw(
    case: BenchCase, gens: VerifierGenerators, temperature: float = 1.0
) -> list[int]:
    """DDTree's predraw path (docs/design.md §1.6): ``R_v ~ softmax(logits[v] / T)`` for all N rows by a
    float32 ``softmax`` and ``torch.multinomial``, one transfer, the host walk; returns the path."""
    z = case.logits.float()
    probs = torch.softmax(z if temperature == 1.0 else z * (1.0 / temperature), dim=-1)
    draw = torch.multinomial(probs, 1, generator=gens.acceptance).reshape(-1).tolist()
    return list(case.tree.tree.path_nodes(_walk(case.tree.tree, draw)))


def _decide_path(
    kind: str, case: BenchCase, temperature: float, gens: VerifierGenerators
) -> list[int]:
    """The engine verifier ``kind``'s accepted path on ``case`` (the dispatch the engine runs)."""
    return verify(kind, case.tree, case.logits, temperature, gens).path_nodes


def _stage(
    path_of: Callable[[], list[int]], cache: StandInCache | None, lengths: list[int]
) -> Callable[[], None]:
    """One timed verifier stage: the decision ``path_of()``, then the KV commit of its path."""

    def run() -> None:
        path = path_of()
        if cache is not None:
            cache.commit(path)
        lengths.append(len(path))

    return run


def _floor(
    case: BenchCase, temperature: float, gens: VerifierGenerators, cache: StandInCache | None
) -> Callable[[], None]:
    def run() -> None:
        floor_stage(case, gens, temperature)
        if cache is not None:
            cache.commit([0])

    return run


def run_verifier_bench(
    budgets=(32, 64, 128),
    vocab: int = 151936,
    *,
    device: str = "cpu",
    trees: int = 3,
    repeats: int = 15,
    depth: int = 15,
    temperature: float = 1.0,
    dtype: str = "float32",
    kinds=BENCH_KINDS,
    seed: int = 0,
    commit: bool = True,
    kv: KVShape | None = None,
) -> dict[str, Any]:
    """Time each stage (``kinds``, DDTree's multinomial predraw when ``predraw`` is among them, and TEV's
    floor) on the same trees; see the module docstring."""
    dev = torch.device(device)
    dt = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}.get(dtype)
    if dt is None:
        raise ValueError(f"dtype must be float32, bfloat16 or float16, got {dtype!r}")
    for k in kinds:
        if k not in BENCH_KINDS:
            raise ValueError(
                f"unknown verifier {k!r} for the bench; choose from {', '.join(BENCH_KINDS)}"
            )
    if trees < 1 or repeats < 1:
        raise ValueError(f"trees and repeats must be >= 1, got trees={trees}, repeats={repeats}")
    kv = kv or KVShape()
    rows = []
    for b in budgets:
        cases = make_cases(
            int(b), int(vocab), trees=trees, depth=depth, device=dev, dtype=dt, seed=seed + int(b)
        )
        gens = VerifierGenerators(seed, dev)
        extra = (MULTINOMIAL,) if "predraw" in kinds else ()
        ms: dict[str, list[float]] = {k: [] for k in (*kinds, *extra, "floor")}
        lengths: dict[str, list[int]] = {k: [] for k in (*kinds, *extra)}
        for case in cases:
            cache = StandInCache(kv, case.tree.num_nodes, dev, dt) if commit else None
            fns = {"floor": _floor(case, temperature, gens, cache)}
            for k in kinds:
                decide = partial(_decide_path, k, case, temperature, gens)
                fns[k] = _stage(decide, cache, lengths[k])
            if extra:
                draw = partial(multinomial_predraw, case, gens, temperature)
                fns[MULTINOMIAL] = _stage(draw, cache, lengths[MULTINOMIAL])
            for k, v in interleaved_ms(
                fns, dev, repeats, setup=cache.refill if cache is not None else None
            ).items():
                ms[k] += v
        med = {k: statistics.median(v) for k, v in ms.items()}
        best = {k: min(v) for k, v in ms.items()}
        row = {
            "budget": int(b),
            "nodes": [c.tree.num_nodes for c in cases],
            "internal": [c.internal for c in cases],
            "max_depth": [c.tree.tree.max_depth for c in cases],
            "mean_block_length": {k: statistics.fmean(v) for k, v in lengths.items()},
            "median_ms": med,
            "min_ms": best,
            "samples_ms": ms,
        }
        if "tev" in med:
            row["tev_over_floor"] = med["tev"] / med["floor"]
            row["tev_over_floor_min"] = (
                best["tev"] / best["floor"]
            )  # robust to load spikes on a shared machine
            for k in (*kinds, *extra):
                if k != "tev":
                    row[f"tev_over_{k}"] = med["tev"] / med[k]
        rows.append(row)
    stage = "decision + bonus + KV-cache commit" if commit else "decision + bonus (no commit)"
    config = {
        "budgets": list(map(int, budgets)),
        "vocab": int(vocab),
        "device": str(dev),
        "trees": trees,
        "repeats": repeats,
        "depth": depth,
        "temperature": temperature,
        "dtype": dtype,
        "kinds": list(kinds),
        "extra_stages": list(extra),
        "floor_of": FLOOR_OF,
        "floor": "TEV's floor: its K-row logsumexp (no residual masses) + 1 transfer + 1-position commit",
        "predraw": "exitlaw's fast predraw (engine predraw_rows: one float64 inverse-CDF draw per row)",
        "predraw_multinomial": "DDTree's predraw (float32 softmax + torch.multinomial over all N rows)",
        "seed": seed,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "stage": stage,
        "commit": commit,
        "kv_shape": asdict(kv) if commit else None,
        "commit_method": (
            "TargetModel.commit on a transformers DynamicCache refilled untimed with views of "
            "a preallocated K/V buffer per layer"
            if commit
            else None
        ),
    }
    return {"config": config, "rows": rows, "text": format_bench(rows, config)}


def format_bench(rows: list[dict[str, Any]], config: dict[str, Any]) -> str:
    kinds = [*config["kinds"], *config.get("extra_stages", ())]
    kv = config.get("kv_shape")
    kv_text = (
        f", KV {kv['layers']}x{kv['kv_heads']}x{kv['head_dim']} ctx {kv['context']}" if kv else ""
    )
    head = (
        f"verifier stage ({config.get('stage', 'decision + bonus')}; target forward excluded), median ms, "
        f"V={config['vocab']}, {config['dtype']}, T={config['temperature']}, {config['device']}, "
        f"{config['threads']} threads, {config['trees']} trees x {config['repeats']} repeats{kv_text}"
    )
    name = {MULTINOMIAL: "multinom."}
    cols = f"{'B':>4} {'K':>9} {'depth':>6} {'TEVfloor':>8} "
    cols += " ".join(f"{name.get(k, k):>9}" for k in kinds)
    cols += f" {'TEV/floor':>9}" + "".join(
        f" {'TEV/' + name.get(k, k):>14}" for k in kinds if k != "tev"
    )
    cols += f" {'TEV/floor(min)':>14}" if "tev" in kinds else ""
    lines = [
        head,
        "predraw = exitlaw's fast predraw (one inverse-CDF draw per row); multinom. = DDTree's "
        "multinomial predraw; TEVfloor = a strict subset of TEV's work (a floor for TEV only)",
        cols,
    ]
    for r in rows:
        m = r["median_ms"]
        k_rng = f"{min(r['internal'])}-{max(r['internal'])}"
        line = f"{r['budget']:>4} {k_rng:>9} {max(r['max_depth']):>6} {m['floor']:>8.3f} "
        line += " ".join(f"{m[k]:>9.3f}" for k in kinds)
        if "tev_over_floor" in r:
            line += f" {r['tev_over_floor']:>9.2f}" + "".join(
                f" {r['tev_over_' + k]:>14.3f}" for k in kinds if k != "tev"
            )
            line += f" {r['tev_over_floor_min']:>14.2f}"
        lines.append(line)
    return "\n".join(lines)


__all__ = [
    "run_verifier_bench",
    "make_cases",
    "floor_stage",
    "multinomial_predraw",
    "FLOOR_OF",
    "MULTINOMIAL",
    "BenchCase",
    "KVShape",
    "StandInCache",
]
