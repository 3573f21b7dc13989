"""One table of names and facts: every verifier, decoding method and tree builder, each named once.

Pure Python (it imports nothing; its package, ``exitlaw.theory``, loads numpy but never torch or JAX),
so the theory, the simulator, the engine, the command line and ``paper_repro`` all read it, and
``exitlaw --help`` pays nothing for it. The registry keeps **facts only** (a verifier's kind, whether
it saturates, what it reads, its display label and colour; a builder's drafter). *Where* a name is
implemented is never written here: each backend registers its callables with a decorator in the
module that defines them, and the places are read from those tables (docs/architecture.md §6):

* ``ENGINE`` / ``ENGINE_BATCHED``: ``@engine_verifier(name)`` / ``@engine_verifier(name,
  batched=True)`` in the verifier's module of :mod:`exitlaw.engine.decode.verifiers` (the engine's
  one dispatch table, :data:`exitlaw.engine.decode.dispatch.DISPATCH`, is built from them); for
  builders ``@engine_builder`` in :mod:`exitlaw.engine.builders`.
* ``SIMULATOR`` / ``PROCEDURE`` / ``FAST`` / ``SETTINGS``: ``@sim_verifier(name, place)`` in
  :mod:`exitlaw.simulate.verifiers` (sampling forms ``f(tree, probs, rng)`` and sampled-draft rules;
  exact-enumeration procedures; vectorised samplers; settings-mode forms); for builders
  ``@sim_builder`` in :mod:`exitlaw.simulate.builders`.

A backend's query (``implemented(place, ...)`` in ``simulate/verifiers/table.py``,
``engine_names(...)`` in ``engine/decode/verifiers/table.py``) passes its table's names to
:func:`verifier_names` (``among=``), which keeps registry order and filters by facts. Every place
that offers a choice (simulator presets, the engine's dispatch table and methods, the bench lists,
the command line's ``choices``, ``paper_repro``, the figures' colours) reads its names that way, and
``property_tests/test_registry.py`` checks both directions; ``property_tests/test_contributor.py``
plants a verifier, a builder and a sampling filter and runs each through every place.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# verifier kinds
FIXED_TREE = "fixed-tree"  # conditionally exact on the realised tree (docs/design.md §1.6)
SAMPLED_DRAFT = "sampled-draft"  # exact only averaged over the draft randomness

# the backends' tables (where a name is implemented is read from them, never written here)
SIMULATOR = "simulator"
PROCEDURE = "procedure"
FAST = "fast"
SETTINGS = "settings"
ENGINE = "engine"
ENGINE_BATCHED = "engine-batched"

# what a verifier reads
TARGET_ROWS = "target rows"  # every node's processed target row p_v
PATH_ROWS = "target rows on the path"  # only the rows its walk visits
INTERNAL_ROWS = "internal target rows"  # the K internal rows (the exit law) and the exit row
DRAFT_ROWS = "draft rows"  # the drafter's rows q (sampled-draft rules)
UNIFORMS = "uniforms"  # random draws (acceptance and bonus streams)


@dataclass(frozen=True)
class Verifier:
    """A verifier and its facts.

    ``saturating``: its exit law is the block law, so ``E[L] = 1 + C_p(T)`` (a fixed-tree notion;
    False for every sampled-draft rule). ``greedy_only``: exact only for a ``T = 0`` target.
    ``sequential``: a data-dependent loop (the engine's batched form runs it row by row).
    ``engine_rows``: which rows the engine's sampling settings process before the call, ``"all"``
    (every row, up front) or ``"read"`` (only the rows the verifier reads, through a processor).
    ``engine_tree``: what it reads of the device tree at ``T > 0``: ``"all"`` (the level-parallel
    matrices) or ``"walk"`` (the host tree only). ``twin_of``: the registered verifier whose law a
    fast twin reproduces. ``label`` / ``color``: how figures and tables show it (the figures'
    ``COLORS`` read them). ``rule``: its key in the sampled-draft rule tables (:data:`~exitlaw.simulate.verifiers.RULES`,
    the prover's ``RULES``, which keys Tsubame's round by its registry name); ``field_label``: its
    column in the field lab's outputs.
    """

    name: str
    kind: str
    saturating: bool
    reads: tuple[str, ...]
    summary: str
    label: str
    color: str
    greedy_only: bool = False
    sequential: bool = False
    engine_rows: str | None = None
    engine_tree: str | None = None
    twin_of: str | None = None
    rule: str | None = None
    field_label: str | None = None


@dataclass(frozen=True)
class Method:
    """A decoding method: ``builder`` names the registered builder that drafts its tree (None: no tree)."""

    name: str
    builder: str | None
    summary: str


@dataclass(frozen=True)
class Builder:
    """A tree builder: ``drafter`` is what it reads (``position-wise`` per-depth rows, an
    ``autoregressive`` drafter, ``both``, or the ``target`` itself); ``sampled_draft_rule`` names the
    registered sampled-draft verifier that verifies its rounds instead of the configured verifier."""

    name: str
    drafter: str
    summary: str
    sampled_draft_rule: str | None = None


VERIFIERS: tuple[Verifier, ...] = (
    Verifier(
        "greedy",
        FIXED_TREE,
        saturating=True,
        reads=(PATH_ROWS,),
        summary="follow the argmax (T = 0; every fixed-tree verifier reduces to it)",
        label="greedy",
        color="#8c564b",
        greedy_only=True,
        engine_tree="walk",
    ),
    Verifier(
        "predraw",
        FIXED_TREE,
        saturating=True,
        reads=(TARGET_ROWS, UNIFORMS),
        summary="DDTree: draw R_v ~ p_v at every node, follow the matching child",
        label="predraw",
        color="#1f77b4",
        engine_rows="all",
        engine_tree="walk",
    ),
    Verifier(
        "residual",
        FIXED_TREE,
        saturating=True,
        reads=(PATH_ROWS, UNIFORMS),
        summary="EAGLE-style sequential residual: accept children in turn, renormalise on rejection",
        label="residual",
        color="#2ca02c",
        sequential=True,
        engine_rows="read",
        engine_tree="walk",
    ),
    Verifier(
        "tev",
        FIXED_TREE,
        saturating=True,
        reads=(INTERNAL_ROWS, UNIFORMS),
        summary="Tree Exit Verification: exit V ~ w, bonus from V's residual row",
        label="TEV",
        color="#d62728",
        engine_rows="read",
        engine_tree="all",
    ),
    Verifier(
        "tev-fast",
        FIXED_TREE,
        saturating=True,
        reads=(INTERNAL_ROWS, UNIFORMS),
        summary="TEV's vectorised twin (verifiers.fast.tev_many, one sample): for large V",
        label="TEV (vectorised)",
        color="#ff9896",
        twin_of="tev",
    ),
    # sampled-draft rules (sampled_draft.RULES takes their ``rule`` keys in this order)
    Verifier(
        "chain-speculative",
        SAMPLED_DRAFT,
        saturating=False,
        reads=(TARGET_ROWS, DRAFT_ROWS, UNIFORMS),
        summary="chain speculative sampling: accept x ~ q w.p. min(1, p/q), bonus from (p - q)+",
        label="chain speculative sampling",
        color="#9467bd",
        rule="chain",
        field_label="chain_sd",
    ),
    Verifier(
        "specinfer",
        SAMPLED_DRAFT,
        saturating=False,
        reads=(TARGET_ROWS, DRAFT_ROWS, UNIFORMS),
        summary="SpecInfer recursive rejection sampling with i.i.d. children",
        label="SpecInfer",
        color="#e377c2",
        rule="specinfer",
        field_label="rrs_iid",
    ),
    Verifier(
        "specinfer-without-replacement",
        SAMPLED_DRAFT,
        saturating=False,
        reads=(TARGET_ROWS, DRAFT_ROWS, UNIFORMS),
        summary="recursive rejection, siblings drawn without replacement (EAGLE-2 / Sequoia)",
        label="SpecInfer without replacement",
        color="#bcbd22",
        rule="without_replacement",
        field_label="rrs_wo",
    ),
    Verifier(
        "hsd",
        SAMPLED_DRAFT,
        saturating=False,
        reads=(TARGET_ROWS, DRAFT_ROWS, UNIFORMS),
        summary="hierarchical speculative decoding of a sampled chain",
        label="HSD",
        color="#17becf",
        field_label="hsd",
    ),
    Verifier(
        "univer",
        SAMPLED_DRAFT,
        saturating=False,
        reads=(TARGET_ROWS, DRAFT_ROWS, UNIFORMS),
        summary="UniVer as read here: HSD along each spine, the residual transported onto siblings",
        label="UniVer",
        color="#aec7e8",
        field_label="univer",
    ),
    Verifier(
        "tsubame",
        SAMPLED_DRAFT,
        saturating=False,
        reads=(DRAFT_ROWS, TARGET_ROWS, UNIFORMS),
        summary="Tsubame's two-pass round: plan from draft scores, re-sample, verify without replacement",
        label="Tsubame",
        color="#ffbb78",
    ),
)

METHODS: tuple[Method, ...] = (
    Method("ar", None, "autoregressive decoding (the baseline; no drafter)"),
    Method("chain", "chain", "DFlash chain: the top-1 token per depth"),
    Method("ddtree", "ddtree", "DDTree: the budget's best-first prefixes of the draft rows"),
)

BUILDERS: tuple[Builder, ...] = (
    Builder("ddtree", "position-wise", "DDTree best-first over per-depth rows"),
    Builder("chain", "position-wise", "top-1 per depth (DFlash's default)"),
    Builder("static", "position-wise", "a fixed branching shape per depth"),
    Builder("eagle", "autoregressive", "EAGLE-2 dynamic expansion, one call per depth"),
    Builder("oracle", "target", "the top-B target prefixes: the coverage ceiling"),
    Builder("caddtree", "position-wise", "CaDDTree: the budget chosen per round"),
    Builder("tsubame", "position-wise", "Tsubame's tree, verified by the config's verifier"),
    Builder(
        "tsubame-rrs",
        "position-wise",
        "Tsubame's tree under its own sampled-draft rule",
        sampled_draft_rule="specinfer-without-replacement",
    ),
    Builder("opt-tree", "autoregressive", "OPT-Tree: expected acceptance, layer by layer"),
    Builder("dartree", "both", "DARTree: a diffusion proposal, an autoregressive correction"),
    Builder(
        "tsubame-univer",
        "position-wise",
        "Tsubame's re-sampled tree under UniVer",
        sampled_draft_rule="univer",
    ),
)


class Names(tuple):
    """A tuple of registered names that is also an ``argparse`` ``choices`` container for
    comma-separated lists: ``["tev", "predraw"] in names`` holds when every item is a name."""

    def __contains__(self, value: object) -> bool:
        if isinstance(value, (list, tuple)):
            return all(tuple.__contains__(self, v) for v in value)
        return tuple.__contains__(self, value)

    def checked_by_the_command(self) -> "CheckedNames":
        """These names as the ``choices`` of a comma-list option whose command checks each name itself."""
        return CheckedNames(self)


class CheckedNames(Names):
    """The names a comma-list option offers (``choices``, for ``--help`` and the registry test), where
    the command checks each name against the same registry query and reports the unknown ones
    (``unknown verifier(s) [...]``, exit status 2): ``argparse`` lets every list through to it."""

    def __contains__(self, value: object) -> bool:
        return isinstance(value, list) or Names.__contains__(self, value)


def _pick(entries, name: str, what: str):
    for e in entries:
        if e.name == name:
            return e
    raise ValueError(f"unknown {what} {name!r}; registered: {', '.join(e.name for e in entries)}")


def verifier(name: str) -> Verifier:
    """The registered verifier called ``name`` (``ValueError`` naming the registered ones)."""
    return _pick(VERIFIERS, name, "verifier")


def method(name: str) -> Method:
    return _pick(METHODS, name, "method")


def builder(name: str) -> Builder:
    return _pick(BUILDERS, name, "builder")


def _among(among, name: str) -> bool:
    return among is None or name in among


def verifier_names(
    *,
    among: Iterable[str] | None = None,
    kind: str | None = None,
    saturating: bool | None = None,
    sampling: bool | None = None,
    sequential: bool | None = None,
) -> Names:
    """Registered verifier names in registry order, filtered by the facts given.

    ``among``: keep only these names (a backend's table: where they are implemented);
    ``sampling``: True keeps the verifiers that sample at ``T > 0`` (not ``greedy_only``), False
    keeps the greedy ones."""
    return Names(
        v.name
        for v in VERIFIERS
        if _among(among, v.name)
        and (kind is None or v.kind == kind)
        and (saturating is None or v.saturating == saturating)
        and (sampling is None or (not v.greedy_only) == sampling)
        and (sequential is None or v.sequential == sequential)
    )


def method_names(*, tree: bool | None = None) -> Names:
    """Registered decoding methods; ``tree=True`` keeps those that draft a tree."""
    return Names(m.name for m in METHODS if tree is None or (m.builder is not None) == tree)


def builder_names(*, among: Iterable[str] | None = None) -> Names:
    """Registered builders in registry order; ``among``: keep only these names (a backend's table)."""
    return Names(b.name for b in BUILDERS if _among(among, b.name))


__all__ = [
    "FIXED_TREE",
    "SAMPLED_DRAFT",
    "SIMULATOR",
    "PROCEDURE",
    "FAST",
    "SETTINGS",
    "ENGINE",
    "ENGINE_BATCHED",
    "Verifier",
    "Method",
    "Builder",
    "VERIFIERS",
    "METHODS",
    "BUILDERS",
    "Names",
    "CheckedNames",
    "verifier",
    "method",
    "builder",
    "verifier_names",
    "method_names",
    "builder_names",
]
