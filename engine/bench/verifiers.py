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
* ``floor`` -- **TEV's floor**: TEV's own node-local reductions
  (:func:`~exitlaw.engine.decode.verifiers.tev.row_reductions`: the softmax of the padded internal rows,
  the edge gathers and residual masses), one host read and the commit of the root alone: a strict subset
  of TEV's work, so TEV cannot beat it. It is a floor for TEV only: residual reads only the rows on its
  path and may well be faster.
* ``tev_authors`` -- **the authors' split** of TEV's stage: their released code computes the internal
  rows' softmax and edge probabilities inside its "verify" window, with the target forward, and times
  only the walk, the bonus draw and the commit; here the row reductions run untimed before each call and
  the rest (propagation, exit race, bonus, read, commit) is timed. Predraw and residual have no such
  split (DDTree's loop times its whole predraw), so the authors' interval compares ``tev_authors`` with
  the whole predraw stage: unlike intervals, labelled as such; like for like is ``tev`` against
  ``predraw``.
* ``tev_compiled`` / ``tev_graph`` (``compiled=True``) -- TEV's decision under ``torch.compile``
  (fullgraph, inductor) and, on CUDA, replayed as one CUDA graph per shape
  (:class:`~exitlaw.engine.decode.verifiers.tev.TevGraphs`).

Per decision (the verifier call alone, commit excluded; the commit, shared by every verifier, is counted
apart) the bench also counts, with :func:`~exitlaw.engine.bench.op_counts.count_ops`: top-level and
launching ops, host reads, host-to-device copies, and whether every tree of a budget ran one op/shape
sequence. The commit gathers the accepted path through the tree's device path table
(:meth:`~exitlaw.engine.decode.device_tree.DeviceTree.path_index`): no host-to-device copy.

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

import statistics
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any, Callable

import torch
from transformers import DynamicCache

from exitlaw.engine.bench.op_counts import count_ops
from exitlaw.engine.builders.single import build_ddtree
from exitlaw.engine.decode.device_tree import DeviceTree, to_device_tree
from exitlaw.engine.decode.dispatch import verify
from exitlaw.engine.decode.timing import interleaved_ms
from exitlaw.engine.decode.verifiers import VerifierGenerators, engine_names, tev
from exitlaw.engine.decode.verifiers.walk import _walk
from exitlaw.engine.models.target import TargetModel
from exitlaw.theory import SamplingSettings

BENCH_KINDS = engine_names(sampling=True)  # predraw, residual, tev
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

    def commit(self, path_nodes, index: torch.Tensor | None = None) -> None:
        TargetModel.commit(self.cache, self.start, path_nodes, index)
        # a cheap shape check, no data sync
        if self.cache.get_seq_length() != self.start + len(path_nodes):
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
AUTHORS = "tev_authors"  # TEV timed over the authors' interval (row reductions untimed)
COMPILED = "tev_compiled"  # TEV's decision under torch.compile
GRAPH = "tev_graph"  # TEV's decision replayed as a CUDA graph (CUDA only)
INTERVALS = {
    "stage": "everything after the target forward: decision, bonus, host read, KV commit",
    "authors": (
        "the authors' released code's timed window: TEV without its row reductions (softmax of the "
        "internal rows, edge gathers), which that code runs inside its forward window; predraw and "
        "residual whole (as DDTree's loop times them)"
    ),
}


def floor_stage(case: BenchCase, gens: VerifierGenerators, temperature: float = 1.0) -> int:
    """TEV's floor: TEV's own row reductions (at temperature ``T``) + one host read; a strict subset of
    :func:`~exitlaw.engine.decode.verifiers.tev.verify_tev`'s work (docs/design.md §1.6)."""
    plan = tev.tev_plan(case.tree)
    factors = tev.row_reductions(case.logits, plan, 1.0 / temperature)
    return int(factors[0, 0, :1].tolist()[0] >= 0.0)


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
    return verify(kind, case.tree, case.logits, SamplingSettings(temperature), gens).path_nodes


class _AuthorsSplit:
    """TEV over the authors' interval: :meth:`prepare` (untimed) runs the row reductions, :meth:`path`
    (timed) the rest of the decision; with ``decide`` (a compiled or graphed ``tev_decide``) instead,
    the whole decision runs in :meth:`path`."""

    def __init__(self, case: BenchCase, temperature: float, gens: VerifierGenerators, decide=None):
        self.case, self.inv_t, self.gens, self.decide = case, 1.0 / temperature, gens, decide
        self.plan = tev.tev_plan(case.tree)
        self.factors = None

    def prepare(self) -> None:
        self.factors = tev.row_reductions(self.case.logits, self.plan, self.inv_t)

    def path(self) -> list[int]:
        noise = tev.draw_noise(self.plan, self.gens, self.case.logits.device)
        logits = self.case.logits
        if self.decide is not None:
            out = self.decide(logits.unsqueeze(0), self.plan, self.inv_t, *noise)
        else:
            out = tev.tev_finish(logits, self.plan, self.inv_t, self.factors, *noise)
        vocab = int(logits.shape[-1])
        return tev.read_decision(out, self.plan, [self.case.tree.tree], vocab)[0].path_nodes


def _stage(
    path_of: Callable[[], list[int]],
    cache: StandInCache | None,
    lengths: list[int],
    tree: DeviceTree,
) -> Callable[[], None]:
    """One timed verifier stage: the decision ``path_of()``, then the KV commit of its path (gathered
    through the tree's device path table: no host-to-device copy)."""

    def run() -> None:
        path = path_of()
        if cache is not None:
            cache.commit(path, tree.path_index(path[-1]))
        lengths.append(len(path))

    return run


def _floor(
    case: BenchCase, temperature: float, gens: VerifierGenerators, cache: StandInCache | None
) -> Callable[[], None]:
    def run() -> None:
        floor_stage(case, gens, temperature)
        if cache is not None:
            cache.commit([0], case.tree.path_index(0))

    return run


def launch_cost_us(device: torch.device, calls: int = 2000) -> float:
    """Wall microseconds per eager op that launches almost no work (an in-place add on one element),
    ``calls`` of them back to back, synchronised once: the per-launch cost the stage's op counts pay."""
    x = torch.zeros(1, device=device)
    for _ in range(50):
        x.add_(1.0)
    t = interleaved_ms({"ops": lambda: [x.add_(1.0) for _ in range(calls)]}, device, 3)["ops"]
    return 1000.0 * statistics.median(t) / calls


def _counts(fns: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    """Per stage, :func:`count_ops` of one call on each tree: the largest counts, and whether every tree
    ran one op/shape sequence (a compiled stage's host traffic is not counted: -1)."""
    out = {}
    for name, calls in fns.items():
        eager = name not in (COMPILED, GRAPH)
        counts = [count_ops(fn, host_traffic=eager) for fn in calls]
        row = {k: max(c.row()[k] for c in counts) for k in counts[0].row()}
        row["one_sequence"] = len({c.sequence for c in counts}) == 1
        out[name] = row
    return out


def _stages_of_case(case, kinds, temperature, gens, cache, lengths, deciders):
    """The timed stages on one tree, the untimed per-stage setups, and the decision callables to count."""
    fns = {"floor": _floor(case, temperature, gens, cache)}
    setups: dict[str, Callable[[], None]] = {}
    decisions: dict[str, Callable[[], Any]] = {}
    for k in kinds:
        decisions[k] = partial(_decide_path, k, case, temperature, gens)
        fns[k] = _stage(decisions[k], cache, lengths[k], case.tree)
    if MULTINOMIAL in lengths:
        decisions[MULTINOMIAL] = partial(multinomial_predraw, case, gens, temperature)
        fns[MULTINOMIAL] = _stage(decisions[MULTINOMIAL], cache, lengths[MULTINOMIAL], case.tree)
    if AUTHORS in lengths:
        split = _AuthorsSplit(case, temperature, gens)
        fns[AUTHORS] = _stage(split.path, cache, lengths[AUTHORS], case.tree)
        setups[AUTHORS] = split.prepare
    for name, decide in deciders.items():  # compiled / graphed TEV: the whole decision
        whole = _AuthorsSplit(case, temperature, gens, decide)
        decisions[name] = whole.path
        fns[name] = _stage(whole.path, cache, lengths[name], case.tree)
    return fns, setups, decisions


@dataclass(frozen=True)
class _BenchPlan:
    """What every budget of one run shares: device, dtype, stages and their deciders."""

    dev: torch.device
    dt: torch.dtype
    vocab: int
    trees: int
    repeats: int
    depth: int
    temperature: float
    kinds: tuple[str, ...]
    seed: int
    kv: KVShape | None  # None: no commit
    deciders: dict[str, Callable]

    @property
    def extra(self) -> tuple[str, ...]:
        """The stages beside the verifiers: DDTree's multinomial, TEV's authors' split, the deciders."""
        kinds = self.kinds
        return (
            (MULTINOMIAL,) * ("predraw" in kinds)
            + (AUTHORS,) * ("tev" in kinds)
            + tuple(self.deciders)
        )


def _check_bench_args(dtype: str, kinds, trees: int, repeats: int) -> torch.dtype:
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
    return dt


def _commit_count(case: BenchCase, cache: StandInCache) -> dict[str, int]:
    """The ops of the commit of ``case``'s deepest path (shared by every verifier)."""
    cache.refill()
    deep = int(case.tree.depth.argmax())
    path = list(case.tree.tree.path_nodes(deep))
    index = case.tree.path_index(deep)
    return count_ops(lambda: cache.commit(path, index)).row()


def _ratios(med: dict, best: dict, plan: _BenchPlan) -> dict[str, float]:
    """TEV's ratios: like for like over the stage interval, the authors' interval against the whole
    predraw (labelled apart), and each decider against eager TEV and predraw."""
    out = {"tev_over_floor": med["tev"] / med["floor"]}
    out["tev_over_floor_min"] = best["tev"] / best["floor"]  # robust to load spikes
    for k in (*plan.kinds, *plan.extra):
        if k not in ("tev", AUTHORS, *plan.deciders):
            out[f"tev_over_{k}"] = med["tev"] / med[k]
    if "predraw" in med:
        out["tev_authors_over_predraw"] = med[AUTHORS] / med["predraw"]
    for k in plan.deciders:
        out[f"{k}_over_tev"] = med[k] / med["tev"]
        if "predraw" in med:
            out[f"{k}_over_predraw"] = med[k] / med["predraw"]
    return out


def _budget_row(budget: int, plan: _BenchPlan) -> dict[str, Any]:
    """One budget: its trees, every stage timed interleaved on each, the op counts, the medians."""
    cases = make_cases(
        budget,
        plan.vocab,
        trees=plan.trees,
        depth=plan.depth,
        device=plan.dev,
        dtype=plan.dt,
        seed=plan.seed + budget,
    )
    gens = VerifierGenerators(plan.seed, plan.dev)
    ms: dict[str, list[float]] = {k: [] for k in (*plan.kinds, *plan.extra, "floor")}
    lengths: dict[str, list[int]] = {k: [] for k in (*plan.kinds, *plan.extra)}
    to_count: dict[str, list[Callable[[], Any]]] = {}
    commit_counts = []
    for case in cases:
        cache = StandInCache(plan.kv, case.tree.num_nodes, plan.dev, plan.dt) if plan.kv else None
        fns, setups, decisions = _stages_of_case(
            case, plan.kinds, plan.temperature, gens, cache, lengths, plan.deciders
        )
        refill = cache.refill if cache is not None else None
        for k, v in interleaved_ms(
            fns, plan.dev, plan.repeats, setup=refill, setups=setups
        ).items():
            ms[k] += v
        for k, fn in decisions.items():
            to_count.setdefault(k, []).append(fn)
        if cache is not None:
            commit_counts.append(_commit_count(case, cache))
    med = {k: statistics.median(v) for k, v in ms.items()}
    best = {k: min(v) for k, v in ms.items()}
    ops = _counts(to_count)
    if commit_counts:
        ops["commit"] = {k: max(c[k] for c in commit_counts) for k in commit_counts[0]}
    row = {
        "budget": budget,
        "nodes": [c.tree.num_nodes for c in cases],
        "internal": [c.internal for c in cases],
        "max_depth": [c.tree.tree.max_depth for c in cases],
        "mean_block_length": {k: statistics.fmean(v) for k, v in lengths.items()},
        "median_ms": med,
        "min_ms": best,
        "samples_ms": ms,
        "ops": ops,
    }
    return row | (_ratios(med, best, plan) if "tev" in med else {})


def _bench_config(plan: _BenchPlan, budgets, dtype: str, per_launch: float) -> dict[str, Any]:
    commit = plan.kv is not None
    return {
        "budgets": list(map(int, budgets)),
        "vocab": plan.vocab,
        "device": str(plan.dev),
        "trees": plan.trees,
        "repeats": plan.repeats,
        "depth": plan.depth,
        "temperature": plan.temperature,
        "dtype": dtype,
        "kinds": list(plan.kinds),
        "extra_stages": list(plan.extra),
        "intervals": INTERVALS,
        "floor_of": FLOOR_OF,
        "floor": "TEV's floor: its row reductions + 1 host read + 1-position commit",
        "predraw": "exitlaw's fast predraw (engine predraw_rows: one float64 inverse-CDF draw per row)",
        "predraw_multinomial": "DDTree's predraw (float32 softmax + torch.multinomial over all N rows)",
        "tev_authors": "TEV over the authors' interval (row reductions untimed)",
        "tev_compiled": "TEV's decision under torch.compile(fullgraph=True), inductor",
        "tev_graph": "TEV's decision replayed as one CUDA graph per shape (TevGraphs)",
        "ops": (
            "per decision (commit apart): top-level / launching ATen ops, host reads, host-to-device "
            "copies (engine/bench/op_counts.py), largest over the trees; one_sequence: every tree of "
            "the budget ran one op/shape sequence"
        ),
        "per_launch_us": per_launch,
        "seed": plan.seed,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "stage": "decision + bonus + KV-cache commit" if commit else "decision + bonus (no commit)",
        "commit": commit,
        "kv_shape": asdict(plan.kv) if commit else None,
        "commit_method": (
            "TargetModel.commit on a transformers DynamicCache refilled untimed with views of "
            "a preallocated K/V buffer per layer, the path gathered through the tree's device "
            "path table (no host-to-device copy)"
            if commit
            else None
        ),
    }


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
    compiled: bool = False,
) -> dict[str, Any]:
    """Time each stage (``kinds``, DDTree's multinomial predraw when ``predraw`` is among them, TEV's
    floor and its authors' split when ``tev`` is, and with ``compiled`` TEV compiled and, on CUDA,
    graphed) on the same trees, and count each decision's ops; see the module docstring."""
    dev = torch.device(device)
    dt = _check_bench_args(dtype, kinds, trees, repeats)
    deciders: dict[str, Callable] = {}
    if compiled and "tev" in kinds:
        deciders[COMPILED] = tev.compiled_decide()
        if dev.type == "cuda":
            deciders[GRAPH] = tev.TevGraphs()
    plan = _BenchPlan(
        dev,
        dt,
        int(vocab),
        trees,
        repeats,
        depth,
        temperature,
        tuple(kinds),
        seed,
        (kv or KVShape()) if commit else None,
        deciders,
    )
    per_launch = launch_cost_us(dev)
    rows = [_budget_row(int(b), plan) for b in budgets]
    config = _bench_config(plan, budgets, dtype, per_launch)
    return {"config": config, "rows": rows, "text": format_bench(rows, config)}


_SHORT = {MULTINOMIAL: "multinom.", AUTHORS: "tev_auth", COMPILED: "tev_comp", GRAPH: "tev_graph"}


def _ratio_columns(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(row key, header) of every ratio the rows hold, like-for-like stage ratios first."""
    keys = [k for k in rows[0] if k.startswith("tev_") and "_over_" in k and not k.endswith("_min")]
    names = {"tev_over_floor": "TEV/floor", "tev_authors_over_predraw": "auth/predraw*"}
    out = []
    for k in keys:
        head = names.get(k)
        if head is None:
            a, b = k.split("_over_")
            head = f"{_SHORT.get(a, 'TEV' if a == 'tev' else a)}/{_SHORT.get(b, b)}"
        out.append((k, head))
    return out


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
    if "per_launch_us" in config:
        head += f"; one near-empty eager op: {config['per_launch_us']:.1f} us"
    cols = f"{'B':>4} {'K':>9} {'depth':>6} {'TEVfloor':>8} "
    cols += " ".join(f"{_SHORT.get(k, k):>9}" for k in kinds)
    lines = [
        head,
        "predraw = exitlaw's fast predraw (one inverse-CDF draw per row); multinom. = DDTree's "
        "multinomial predraw; TEVfloor = a strict subset of TEV's work (a floor for TEV only); "
        "tev_auth = TEV over the authors' interval (its row reductions untimed)",
        cols,
    ]
    for r in rows:
        m = r["median_ms"]
        k_rng = f"{min(r['internal'])}-{max(r['internal'])}"
        line = f"{r['budget']:>4} {k_rng:>9} {max(r['max_depth']):>6} {m['floor']:>8.3f} "
        lines.append(line + " ".join(f"{m[k]:>9.3f}" for k in kinds))
    ratios = _ratio_columns(rows) if rows and "tev_over_floor" in rows[0] else []
    if ratios:
        lines.append(
            "ratios of medians; like for like (the stage interval) unless marked *: the authors' "
            "interval for TEV against the whole predraw stage"
        )
        lines.append(f"{'B':>4} " + " ".join(f"{h:>15}" for _, h in ratios))
        for r in rows:
            lines.append(f"{r['budget']:>4} " + " ".join(f"{r[k]:>15.3f}" for k, _ in ratios))
    if rows and "ops" in rows[0]:
        lines.append(
            "per decision (commit apart): top-level / launching ops, host reads, host-to-device "
            "copies, one op/shape sequence over the budget's trees"
        )
        lines.append(f"{'B':>4} {'stage':>12} {'top':>5} {'launch':>6} {'reads':>5} {'H2D':>4} seq")
        for r in rows:
            for name, c in r["ops"].items():
                seq = {True: "one", False: "several"}.get(c.get("one_sequence"), "-")
                lines.append(
                    f"{r['budget']:>4} {_SHORT.get(name, name):>12} {c['top_level_ops']:>5} "
                    f"{c['launching_ops']:>6} {c['host_reads']:>5} {c['host_to_device']:>4} {seq}"
                )
    return "\n".join(lines)


__all__ = [
    "AUTHORS",
    "COMPILED",
    "GRAPH",
    "INTERVALS",
    "launch_cost_us",
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
