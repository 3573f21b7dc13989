"""``exitlaw prove``: a bounded-exhaustive symbolic proof that a verifier procedure is exact and saturating.

For a procedure ``f(tree, rows, rand) -> (exit_node, bonus_token)`` written over the
two-call randomness interface (:mod:`.randomness`), on **every** tree of
:func:`~.tree_enum.all_trees` (every rooted shape with ``<= N`` nodes, every child-token
assignment up to relabelling, every vocabulary ``1..V``) with **symbolic** rows
(:mod:`.symbolic`: each entry a rational function of free positive symbols, rows summing
to one identically), the implementation's branches are enumerated
(:func:`~.randomness.enumerate_law` with ``one`` symbolic) and three identities of
rational functions are checked (docs/design.md §1.2 and §1.3):

(a) block law      ``Pr[exit = v, bonus = y] = P(v) p_v(y) [y not a child token of v]``;
(b) mean length    ``E[L] = sum_v (depth v + 1) Pr[exit = v] = 1 + C_p``;
(c) completed block (exactness): for every node ``v`` and token ``y`` not a child token of ``v``,
    ``Q(v, y) + sum_{u < v on the path, c = next node} Q(u, x_c) P(v) / P(c) * p_v(y) = P(v) p_v(y)``
    -- the emitted block extended by exact target sampling puts the target's mass on
    every sequence (extensions beyond the tree are common factors and cancel).

(a) holding on every instance is the proof; (c) without (a) means exact but not
saturating. When an identity fails, a rational point where it fails is found (the
difference is a non-zero rational function, so random small integers for the
symbols hit a non-root), the procedure is re-run there with ``Fraction`` rows, and the
**counterexample** (tree, rational rows, both laws) is reported. A procedure that
branches on comparisons of probabilities, or leaves exact arithmetic, cannot run on
symbols (:class:`~.symbolic.SymbolicError`); for it the prover only *searches* rational
points exactly and says so ("unproved" when nothing is found).

Scope of a proof: exact arithmetic of the randomness interface (floating-point coins are
the boundary mode's job), interior rows (every entry ``> 0``), the listed trees.

Related modes: raw numpy-Generator verifiers (:mod:`.prove_raw`, exact laws at rational points),
sampled-draft rules exact averaged over the drafts (:mod:`.prove_sampled`) and two-round
losslessness (:mod:`.prove_rounds`).
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import random
import time
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Callable

from exitlaw.simulate.kit.conformance import VerifierCallError, load_verifier
from exitlaw.simulate.prove.symbolic import SymbolicError, rows_at, symbolic_one, symbolic_rows
from exitlaw.simulate.prove.tree_enum import all_trees, tree_shapes
from exitlaw.simulate.randomness import enumerate_law
from exitlaw.theory import DraftTree

PROVED, COUNTEREXAMPLE, UNPROVED = "proved", "counterexample", "unproved"
EXACT_AT_POINTS = (
    "exact_at_points"  # raw-uniform verifiers (:mod:`.prove_raw`): evidence, not a proof
)
EXIT_CODES = {PROVED: 0, COUNTEREXAMPLE: 1, UNPROVED: 3, EXACT_AT_POINTS: 3}


class ProofError(ValueError):
    """The prover's inputs are invalid (sizes out of range)."""


def identities(tree: DraftTree, rows, law: dict, one) -> dict:
    """The three identities (module docstring) for an implementation law ``{(v, y): prob}``.

    Works on any number type (symbolic, ``Fraction``). Returns ``{"block", "mean_length",
    "completed_block": bool, "impl", "canonical": [N][V] tables, "mean": E[L], "ceiling": 1 + C_p}``
    (``mean`` and ``ceiling`` only for ``Fraction``). (b) is checked as
    ``sum_v (depth v + 1) (Pr[exit = v] - w(v)) = 0``, equivalent since ``sum_v (depth v + 1) w(v) = 1 + C_p``
    (docs/design.md §1.2), which keeps the symbolic sums small.
    """
    n, vocab = tree.num_nodes, len(rows[0])
    zero = one - one
    kids = [{int(tree.token[c]): int(c) for c in tree.children[v]} for v in range(n)]
    edge = [one] + [rows[int(tree.parent[u])][int(tree.token[u])] for u in range(1, n)]
    prefix = [one] * n
    for u in range(1, n):
        prefix[u] = prefix[int(tree.parent[u])] * edge[u]
    impl = [[zero] * vocab for _ in range(n)]
    for (v, y), p in law.items():
        impl[v][y] = impl[v][y] + p
    canon = [
        [zero if y in kids[v] else prefix[v] * rows[v][y] for y in range(vocab)] for v in range(n)
    ]
    block = all(impl[v][y] == canon[v][y] for v in range(n) for y in range(vocab))
    depth = tree.depth
    gap = zero
    for v in range(n):
        exit_v = sum(impl[v], zero)
        w_v = sum(canon[v], zero)
        if exit_v != w_v:
            gap = gap + (exit_v - w_v) * int(depth[v] + 1)
    mean_ok = gap == zero
    completed = True
    for v in range(n):
        path = tree.path_nodes(v)  # root .. v
        for y in range(vocab):
            if y in kids[v]:
                continue
            total = impl[v][y]
            for i in range(len(path) - 1):  # blocks ending in the child token x_c of an ancestor u
                u, c = path[i], path[i + 1]
                q = impl[u][int(tree.token[c])]
                if not q:
                    continue
                cont = rows[v][y]
                for j in range(i + 1, len(path) - 1):
                    cont = cont * edge[path[j + 1]]
                total = total + q * cont
            if total != canon[v][y]:
                completed = False
    out = {
        "block": block,
        "mean_length": mean_ok,
        "completed_block": completed,
        "impl": impl,
        "canonical": canon,
        "mean": None,
        "ceiling": None,
    }
    if isinstance(one, Fraction):
        out["mean"] = sum(
            (impl[v][y] * int(depth[v] + 1) for v in range(n) for y in range(vocab)), zero
        )
        out["ceiling"] = one + sum(prefix[1:], zero)
    return out


def child_orders(tree: DraftTree):
    """Every ``child_order`` callable: one permutation of the children of every node (product of ``k_v!``)."""
    perms = [
        list(itertools.permutations(int(c) for c in tree.children[v]))
        for v in range(tree.num_nodes)
    ]
    for choice in itertools.product(*perms):
        yield (lambda v, choice=choice: choice[v]), [list(c) for c in choice]


@dataclass
class ProofReport:
    verifier: str
    status: str
    exit_code: int
    max_nodes: int
    vocab: int
    source_sha256: str
    shapes: dict = field(default_factory=dict)  # nodes -> number of shapes
    trees: dict = field(default_factory=dict)  # "n=..,V=.." -> trees checked
    variants: int = 0  # (tree, child order) runs
    branches: int = 0  # leaves of the enumerated draw trees
    seconds: float = 0.0  # wall clock
    cpu_seconds: float = 0.0  # CPU time of this process (one core)
    symbolic: bool = True
    note: str = ""
    counterexample: dict = field(default_factory=dict)
    scope: str = (
        "every rooted tree shape with <= max_nodes nodes, every child-token assignment up to a "
        "global relabelling of the vocabulary, vocabularies 1..vocab (k and k + 1 for a shape whose "
        "largest sibling set k needs more); symbolic interior rows "
        "p_v(y) = s_vy / (1 + sum_z s_vz), s > 0; exact arithmetic of the randomness interface"
    )

    def to_json(self) -> dict:
        return asdict(self)


def load_procedure(spec: str, *, child_order: bool = False) -> Callable:
    """``MODULE:CALLABLE`` callable as ``f(tree, rows, rand)`` (and ``child_order=`` when asked), else
    :class:`~.conformance.VerifierCallError` (a ``ValueError``) saying why."""
    fn = load_verifier(spec)
    try:
        sig = inspect.signature(fn)
        sig.bind("tree", "rows", "rand", **({"child_order": None} if child_order else {}))
    except (TypeError, ValueError) as err:
        want = "f(tree, rows, rand" + (", child_order=...)" if child_order else ")")
        raise VerifierCallError(
            f"{spec} cannot be called as {want} (a procedure over exitlaw's randomness "
            f"interface): {err}"
        ) from err
    return fn


def source_sha256(fn: Callable) -> str:
    """sha256 of the verifier's source text (of its module file when the function's own source is unavailable)."""
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        text = repr(fn)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _fmt(x) -> str:
    return str(x) if isinstance(x, Fraction) else repr(x)


def _concrete(proc, tree, rows, kwargs) -> tuple[dict, dict]:
    one = Fraction(1)
    law = enumerate_law(lambda r: proc(tree, rows, r, **kwargs), one=one)
    _validate(law, tree, len(rows[0]))
    return law, identities(tree, rows, law, one)


def _counterexample(proc, tree, rows, law, ids, kwargs, order, how) -> dict:
    n, vocab = tree.num_nodes, len(rows[0])
    failed = [k for k in ("block", "mean_length", "completed_block") if not ids[k]]
    return {
        "tree": {"parent": tree.parent.tolist(), "token": tree.token.tolist()},
        "vocab": vocab,
        "child_order": order,
        "found_by": how,
        "failed": failed,
        "verdict": "not exact" if not ids["completed_block"] else "exact but not saturating",
        "rows": [[_fmt(x) for x in r] for r in rows],
        **laws_compared(ids, n, vocab, _fmt),
    }


def laws_compared(ids: dict, n: int, vocab: int, fmt: Callable) -> dict:
    """A counterexample's laws from :func:`identities`: the implementation's and the block law on every
    ``(v, y)`` where either is non-zero, then ``E[L]`` and the ceiling ``1 + C_p``, each written by ``fmt``."""
    cells = [
        (v, y)
        for v in range(n)
        for y in range(vocab)
        if ids["impl"][v][y] or ids["canonical"][v][y]
    ]
    return {
        "implementation_law": {f"{v},{y}": fmt(ids["impl"][v][y]) for v, y in cells},
        "block_law": {f"{v},{y}": fmt(ids["canonical"][v][y]) for v, y in cells},
        "mean_length": fmt(ids["mean"]),
        "ceiling": fmt(ids["ceiling"]),
    }


def _validate(law: dict, tree: DraftTree, vocab: int) -> None:
    for out in law:
        ok = isinstance(out, tuple) and len(out) == 2 and all(isinstance(x, int) for x in out)
        if not ok or not (0 <= out[0] < tree.num_nodes and 0 <= out[1] < vocab):
            raise ProofError(
                f"the verifier returned {out!r}; expected (exit_node, bonus_token) with "
                f"0 <= node < {tree.num_nodes}, 0 <= token < {vocab}"
            )


def _point(num_symbols: int, rng: random.Random) -> dict:
    return {i: Fraction(rng.randint(1, 9), rng.randint(1, 4)) for i in range(num_symbols)}


def _witness(proc, tree, vocab, kwargs, rng, tries: int) -> tuple | None:
    """A rational point where the implementation's law breaks an identity, by exact enumeration."""
    for _ in range(tries):
        rows = rows_at(tree.num_nodes, vocab, _point(tree.num_nodes * max(vocab - 1, 1), rng))
        law, ids = _concrete(proc, tree, rows, kwargs)
        if not (ids["block"] and ids["mean_length"] and ids["completed_block"]):
            return rows, law, ids
    return None


def prove(
    proc: Callable,
    *,
    name: str = "verifier",
    max_nodes: int = 6,
    vocab: int = 3,
    every_child_order: bool = False,
    seed: int = 0,
    search_points: int = 8,
    progress: Callable | None = None,
) -> ProofReport:
    """Bounded-exhaustive proof of ``proc`` (see the module docstring); stops at the first counterexample.

    ``every_child_order`` runs ``proc(tree, rows, rand, child_order=...)`` once per permutation of
    every node's children (the sequential residual's law must not depend on the order).
    ``search_points`` rational points per tree are tried when ``proc`` cannot run on symbols.
    """
    if not 1 <= max_nodes <= 12:
        raise ProofError(f"--max-nodes must be in 1..12, got {max_nodes}")
    if not 1 <= vocab <= 8:
        raise ProofError(f"--vocab must be in 1..8, got {vocab}")
    rng = random.Random(seed)
    rep = ProofReport(
        name,
        PROVED,
        0,
        max_nodes,
        vocab,
        source_sha256(proc),
        shapes={str(n): len(tree_shapes(n)) for n in range(1, max_nodes + 1)},
    )
    done = ReportClock(rep).done
    for tree, V in all_trees(max_nodes, vocab):
        key = f"n={tree.num_nodes},V={V}"
        rep.trees[key] = rep.trees.get(key, 0) + 1
        variants = child_orders(tree) if every_child_order else [(None, None)]
        for order, order_json in variants:
            kwargs = {} if order is None else {"child_order": order}
            rep.variants += 1
            cex = _one_variant(proc, tree, V, kwargs, order_json, rep, rng, search_points)
            if cex:
                rep.counterexample = cex
                return done(COUNTEREXAMPLE)
        if progress is not None:
            progress(tree, V, rep)
    return done(PROVED if rep.symbolic else UNPROVED)


def _one_variant(
    proc, tree, V, kwargs, order_json, rep: ProofReport, rng, search_points
) -> dict | None:
    if rep.symbolic:
        rows = symbolic_rows(tree.num_nodes, V)
        one = symbolic_one(tree.num_nodes, V)
        try:
            law = enumerate_law(lambda r: proc(tree, rows, r, **kwargs), one=one)
        except SymbolicError as err:
            rep.symbolic = False
            rep.note = (
                f"not symbolic: {err} (first on tree parent {tree.parent.tolist()} token "
                f"{tree.token.tolist()}, V={V}); searched {search_points} exact rational points per "
                "tree instead"
            )
        else:
            _validate(law, tree, V)
            rep.branches += len(law)
            ids = identities(tree, rows, law, one)
            if ids["block"] and ids["mean_length"] and ids["completed_block"]:
                return None
            # the difference is a non-zero rational function: random points find a non-root quickly
            hit = _witness(proc, tree, V, kwargs, rng, tries=200)
            if hit is None:
                raise ProofError(
                    f"identity fails symbolically on tree {tree.parent.tolist()} / "
                    f"{tree.token.tolist()} but no rational witness was found in 200 points"
                )
            return _counterexample(
                proc, tree, *hit, kwargs, order_json, "symbolic identity, then rational point"
            )
    hit = _witness(proc, tree, V, kwargs, rng, tries=search_points)
    if hit is not None:
        return _counterexample(proc, tree, *hit, kwargs, order_json, "search at rational points")
    return None


class ReportClock:
    """Closes a prove report of any mode: :meth:`done` sets its status and exit code
    (:data:`EXIT_CODES`) and the wall and CPU seconds since the clock started."""

    def __init__(self, rep):
        self.rep, self.start, self.cpu = rep, time.perf_counter(), time.process_time()

    def done(self, status: str):
        rep = self.rep
        rep.status, rep.exit_code = status, EXIT_CODES[status]
        rep.seconds = round(time.perf_counter() - self.start, 3)
        rep.cpu_seconds = round(time.process_time() - self.cpu, 3)
        return rep


def status_line(rep) -> str:
    """The last line of every prover report: its status and the command's exit status."""
    return f"status: {rep.status}   (exit status {rep.exit_code})"


def unproved_on_symbols(what: str, where: str = "") -> str:
    """The ``UNPROVED`` line of a search that found no counterexample but could not run on symbols."""
    return f"UNPROVED: no counterexample found, but {what} could not be run on symbols{where}"


def report_head(title: str, rep, counts: str) -> list[str]:
    """The first lines of every prover report: what was run, the source hash, what was covered and its time."""
    out = [
        title,
        f"source sha256 {rep.source_sha256}",
        f"{counts}, {rep.seconds:.2f} s ({rep.cpu_seconds:.2f} s CPU)",
    ]
    if rep.note:
        out.append(rep.note)
    return out


def report_text(
    rep,
    title: str,
    counts: str,
    says: dict[str, str],
    counterexample: Callable[[dict], list[str]],
    after: list[str] | None = None,
) -> str:
    """Every prove report's text, whatever its mode: the head (:func:`report_head`), the line its status
    ``says`` (a status not in ``says`` is a refutation: the ``counterexample`` lines of
    ``rep.counterexample``), the lines ``after`` it, then :func:`status_line`."""
    out = report_head(title, rep, counts)
    out += [says[rep.status]] if rep.status in says else counterexample(rep.counterexample)
    out += after or []
    out.append(status_line(rep))
    return "\n".join(out)


def _proof_counterexample(c: dict) -> list[str]:
    """A refuted verifier's tree, rows and law beside the block law."""
    out = [
        f"COUNTEREXAMPLE ({c['verdict']}; fails: {', '.join(c['failed'])}; found by {c['found_by']})",
        f"  tree parent {c['tree']['parent']} token {c['tree']['token']}, vocabulary {c['vocab']}"
        + (f", child order {c['child_order']}" if c["child_order"] else ""),
    ]
    out += [f"  p_{v} = [{', '.join(r)}]" for v, r in enumerate(c["rows"])]
    out.append(f"  {'(exit, bonus)':<14} {'implementation':>16} {'block law':>16}")
    for k in c["block_law"]:
        mark = "" if c["implementation_law"][k] == c["block_law"][k] else "   <-"
        out.append(f"  {k:<14} {c['implementation_law'][k]:>16} {c['block_law'][k]:>16}{mark}")
    out.append(f"  E[L] = {c['mean_length']}   1 + C_p = {c['ceiling']}")
    if "max_deviation" in c:
        out.append(
            f"  largest deviation {c['max_deviation']} (= {float(Fraction(c['max_deviation'])):.3g})"
        )
    return out


def format_proof(rep: ProofReport) -> str:
    """Plain-text summary: status, what was covered, time, and the counterexample if any."""
    total = sum(rep.trees.values())
    followed = rep.symbolic is False and not rep.note.startswith("the interval stand-in")
    says = {
        PROVED: "PROVED: block law = P(v) p_v(y)[y not a child token], E[L] = 1 + C_p and the "
        "completed-block law hold as identities of rational functions on every tree listed",
        UNPROVED: unproved_on_symbols("the verifier")
        if followed
        else "UNPROVED: the verifier could not be followed (see above); no verdict",
        EXACT_AT_POINTS: "EXACT AT THE POINTS SEARCHED (evidence, not a proof): the implementation's "
        "exact law equals the block law, E[L] = 1 + C_p, at every rational point tried on every tree "
        "listed",
    }
    return report_text(
        rep,
        f"exitlaw prove {rep.verifier}   max nodes {rep.max_nodes}   vocabularies 1..{rep.vocab}",
        f"shapes per size {rep.shapes}; {total} trees, {rep.variants} runs, {rep.branches} law cells",
        says,
        _proof_counterexample,
    )


__all__ = [
    "EXACT_AT_POINTS",
    "prove",
    "load_procedure",
    "identities",
    "child_orders",
    "format_proof",
    "source_sha256",
    "ProofReport",
    "ProofError",
    "PROVED",
    "COUNTEREXAMPLE",
    "UNPROVED",
    "EXIT_CODES",
    "ReportClock",
    "report_text",
    "report_head",
    "status_line",
    "unproved_on_symbols",
]
