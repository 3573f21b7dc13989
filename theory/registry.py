"""One table of names: every verifier, decoding method and tree builder, each named once with its facts.

Pure Python (it imports nothing; its package, ``exitlaw.theory``, loads numpy but never torch or JAX),
so the theory, the simulator, the engine, the command line and ``paper_repro`` all read it, and
``exitlaw --help`` pays nothing for it. Every place that offers a
choice of verifier, method or builder (simulator presets, the engine's dispatch table, the bench
lists, the command line's ``choices``, ``paper_repro``) takes its names from here, and
``property_tests/test_registry.py`` checks both directions: every registered name is offered where
the registry says it is implemented, and every name offered is registered.

Where each name is implemented (the ``implemented_in`` sets):

* ``SIMULATOR``: a function of :mod:`exitlaw.simulate.verifiers` named by :attr:`Verifier.function`
  (fixed-tree sampling forms ``f(tree, probs, rng)``; sampled-draft rules); for builders, an entry
  of :data:`exitlaw.simulate.builders.table.SIM_BUILDERS`.
* ``PROCEDURE``: an exact-enumeration procedure in ``exitlaw.simulate.verifiers.PROCEDURES``.
* ``FAST``: a vectorised sampler in ``exitlaw.simulate.verifiers.fast.FAST_SAMPLERS``.
* ``SETTINGS``: a settings-mode form (raw logits plus sampling settings) in
  :mod:`exitlaw.simulate.verifiers.with_settings`.
* ``ENGINE`` / ``ENGINE_BATCHED``: a single-tree / batched form registered with
  ``@engine_verifier(name)`` / ``@engine_verifier(name, batched=True)`` in the verifier's module of
  :mod:`exitlaw.engine.decode.verifiers`, from which the engine's one dispatch table
  (:data:`exitlaw.engine.decode.dispatch.DISPATCH`) is built; for builders, an entry of
  :data:`exitlaw.engine.builders.BUILDERS` / a name :func:`exitlaw.engine.builders.build_trees_batch`
  takes.

Every place that offers a choice reads its names here: simulator presets
(``simulate/lab/presets.py``), the builder tables, the engine's dispatch table and methods
(``engine/decode/dispatch.py``, ``engine/decode/loop.py``, ``engine/serve/engine.py``), the bench
lists (``engine/bench/verifiers.py``, ``engine/bench/batch.py``, ``simulate/bench/verifiers.py``),
the command line's ``choices`` (``exitlaw/cli/engine.py``, ``simulate.py``, ``serve.py``),
``paper_repro`` (``reproduce.py``, ``ledger_inputs.py``) and the figures' lists.

**Adding a verifier** touches at most three source files (plus tests):

* in the simulator: (1) its module in ``simulate/verifiers/`` (sampling form, and procedure, as
  ``hsd.py`` holds both), (2) one :class:`Verifier` entry here, (3) its export in
  ``simulate/verifiers/__init__.py``; presets, the bench lists, the command line and ``paper_repro``
  pick it up from its facts (a procedure written in ``procedures.py`` goes in its ``PROCEDURES``
  table there, a fast twin in ``simulate/verifiers/fast.py``: places it then lists in ``implemented_in``);
* in the engine: (1) its module in ``engine/decode/verifiers/`` (single-tree and batched forms side
  by side, each registered with ``@engine_verifier``) and its import in that package's
  ``__init__.py``, (2) one :class:`Verifier` entry here with its ``engine_rows`` /
  ``engine_tree`` facts; the dispatch table, ``DecodeConfig``, the bench lists and the command line
  follow.

**Adding a builder** touches at most three source files (plus tests): (1) its module in
``simulate/builders/`` (or ``engine/builders/``), (2) one :class:`Builder` entry here, (3) its
entry in ``simulate/builders/table.py`` (or ``engine/builders/__init__.py``'s ``BUILDERS``); the
presets and ``SimConfig`` validation follow. An engine builder drafted by a decoding method also
needs its :class:`Method` entry here.
"""

from __future__ import annotations

from dataclasses import dataclass

# verifier kinds
FIXED_TREE = "fixed-tree"  # conditionally exact on the realised tree (docs/design.md §1.6)
SAMPLED_DRAFT = "sampled-draft"  # exact only averaged over the draft randomness

# where a name is implemented
SIMULATOR = "simulator"
PROCEDURE = "procedure"
FAST = "fast"
SETTINGS = "settings"
ENGINE = "engine"
ENGINE_BATCHED = "engine-batched"
PLACES = (SIMULATOR, PROCEDURE, FAST, SETTINGS, ENGINE, ENGINE_BATCHED)

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
    fast twin reproduces (the engine's functions register themselves where they are defined, in
    :mod:`exitlaw.engine.decode.verifiers`). ``function``: its name in :mod:`exitlaw.simulate.verifiers`;
    ``rule``: its key in the sampled-draft rule tables (:data:`~exitlaw.simulate.verifiers.RULES`,
    the prover's ``RULES``, which keys Tsubame's round by its registry name); ``field_label``: its
    column in the field lab's outputs.
    """

    name: str
    kind: str
    saturating: bool
    reads: tuple[str, ...]
    implemented_in: frozenset[str]
    summary: str
    greedy_only: bool = False
    sequential: bool = False
    engine_rows: str | None = None
    engine_tree: str | None = None
    twin_of: str | None = None
    function: str | None = None
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
    implemented_in: frozenset[str]
    drafter: str
    summary: str
    sampled_draft_rule: str | None = None


_EVERYWHERE = frozenset({SIMULATOR, PROCEDURE, FAST, ENGINE, ENGINE_BATCHED})

VERIFIERS: tuple[Verifier, ...] = (
    Verifier(
        "greedy",
        FIXED_TREE,
        saturating=True,
        reads=(PATH_ROWS,),
        implemented_in=_EVERYWHERE,
        summary="follow the argmax (T = 0; every fixed-tree verifier reduces to it)",
        greedy_only=True,
        engine_tree="walk",
        function="greedy",
    ),
    Verifier(
        "predraw",
        FIXED_TREE,
        saturating=True,
        reads=(TARGET_ROWS, UNIFORMS),
        implemented_in=_EVERYWHERE | {SETTINGS},
        summary="DDTree: draw R_v ~ p_v at every node, follow the matching child",
        engine_rows="all",
        engine_tree="walk",
        function="predraw",
    ),
    Verifier(
        "residual",
        FIXED_TREE,
        saturating=True,
        reads=(PATH_ROWS, UNIFORMS),
        implemented_in=_EVERYWHERE | {SETTINGS},
        summary="EAGLE-style sequential residual: accept children in turn, renormalise on rejection",
        sequential=True,
        engine_rows="read",
        engine_tree="walk",
        function="residual",
    ),
    Verifier(
        "tev",
        FIXED_TREE,
        saturating=True,
        reads=(INTERNAL_ROWS, UNIFORMS),
        implemented_in=_EVERYWHERE | {SETTINGS},
        summary="Tree Exit Verification: exit V ~ w, bonus from V's residual row",
        engine_rows="read",
        engine_tree="all",
        function="tev",
    ),
    Verifier(
        "tev-fast",
        FIXED_TREE,
        saturating=True,
        reads=(INTERNAL_ROWS, UNIFORMS),
        implemented_in=frozenset({SIMULATOR}),
        summary="TEV's vectorised twin (verifiers.fast.tev_many, one sample): for large V",
        twin_of="tev",
    ),
    # sampled-draft rules (sampled_draft.RULES takes their ``rule`` keys in this order)
    Verifier(
        "chain-speculative",
        SAMPLED_DRAFT,
        saturating=False,
        reads=(TARGET_ROWS, DRAFT_ROWS, UNIFORMS),
        implemented_in=frozenset({SIMULATOR, SETTINGS}),
        summary="chain speculative sampling: accept x ~ q w.p. min(1, p/q), bonus from (p - q)+",
        function="chain_speculative",
        rule="chain",
        field_label="chain_sd",
    ),
    Verifier(
        "specinfer",
        SAMPLED_DRAFT,
        saturating=False,
        reads=(TARGET_ROWS, DRAFT_ROWS, UNIFORMS),
        implemented_in=frozenset({SIMULATOR}),
        summary="SpecInfer recursive rejection sampling with i.i.d. children",
        function="specinfer",
        rule="specinfer",
        field_label="rrs_iid",
    ),
    Verifier(
        "specinfer-without-replacement",
        SAMPLED_DRAFT,
        saturating=False,
        reads=(TARGET_ROWS, DRAFT_ROWS, UNIFORMS),
        implemented_in=frozenset({SIMULATOR, SETTINGS}),
        summary="recursive rejection, siblings drawn without replacement (EAGLE-2 / Sequoia)",
        function="specinfer_without_replacement",
        rule="without_replacement",
        field_label="rrs_wo",
    ),
    Verifier(
        "hsd",
        SAMPLED_DRAFT,
        saturating=False,
        reads=(TARGET_ROWS, DRAFT_ROWS, UNIFORMS),
        implemented_in=frozenset({SIMULATOR}),
        summary="hierarchical speculative decoding of a sampled chain",
        function="hsd",
        field_label="hsd",
    ),
    Verifier(
        "univer",
        SAMPLED_DRAFT,
        saturating=False,
        reads=(TARGET_ROWS, DRAFT_ROWS, UNIFORMS),
        implemented_in=frozenset({SIMULATOR}),
        summary="UniVer as read here: HSD along each spine, the residual transported onto siblings",
        function="univer",
        field_label="univer",
    ),
    Verifier(
        "tsubame",
        SAMPLED_DRAFT,
        saturating=False,
        reads=(DRAFT_ROWS, TARGET_ROWS, UNIFORMS),
        implemented_in=frozenset({SIMULATOR}),
        summary="Tsubame's two-pass round: plan from draft scores, re-sample, verify without replacement",
        function="tsubame_round",
    ),
)

METHODS: tuple[Method, ...] = (
    Method("ar", None, "autoregressive decoding (the baseline; no drafter)"),
    Method("chain", "chain", "DFlash chain: the top-1 token per depth"),
    Method("ddtree", "ddtree", "DDTree: the budget's best-first prefixes of the draft rows"),
)

_SIM = frozenset({SIMULATOR})
_BOTH = frozenset({SIMULATOR, ENGINE, ENGINE_BATCHED})

BUILDERS: tuple[Builder, ...] = (
    Builder("ddtree", _BOTH, "position-wise", "DDTree best-first over per-depth rows"),
    Builder("chain", _BOTH, "position-wise", "top-1 per depth (DFlash's default)"),
    Builder("static", _SIM, "position-wise", "a fixed branching shape per depth"),
    Builder("eagle", _SIM, "autoregressive", "EAGLE-2 dynamic expansion, one call per depth"),
    Builder("oracle", _SIM, "target", "the top-B target prefixes: the coverage ceiling"),
    Builder("caddtree", _SIM, "position-wise", "CaDDTree: the budget chosen per round"),
    Builder("tsubame", _SIM, "position-wise", "Tsubame's tree, verified by the config's verifier"),
    Builder(
        "tsubame-rrs",
        _SIM,
        "position-wise",
        "Tsubame's tree under its own sampled-draft rule",
        sampled_draft_rule="specinfer-without-replacement",
    ),
    Builder("opt-tree", _SIM, "autoregressive", "OPT-Tree: expected acceptance, layer by layer"),
    Builder("dartree", _SIM, "both", "DARTree: a diffusion proposal, an autoregressive correction"),
    Builder(
        "tsubame-univer",
        _SIM,
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


def verifier_names(
    *,
    implemented: str | None = None,
    kind: str | None = None,
    saturating: bool | None = None,
    sampling: bool | None = None,
    sequential: bool | None = None,
) -> Names:
    """Registered verifier names in registry order, filtered by the facts given.

    ``implemented``: one of :data:`PLACES`; ``sampling``: True keeps the verifiers that sample at
    ``T > 0`` (not ``greedy_only``), False keeps the greedy ones."""
    if implemented is not None and implemented not in PLACES:
        raise ValueError(f"unknown place {implemented!r}; places: {', '.join(PLACES)}")
    return Names(
        v.name
        for v in VERIFIERS
        if (implemented is None or implemented in v.implemented_in)
        and (kind is None or v.kind == kind)
        and (saturating is None or v.saturating == saturating)
        and (sampling is None or (not v.greedy_only) == sampling)
        and (sequential is None or v.sequential == sequential)
    )


def method_names(*, tree: bool | None = None) -> Names:
    """Registered decoding methods; ``tree=True`` keeps those that draft a tree."""
    return Names(m.name for m in METHODS if tree is None or (m.builder is not None) == tree)


def builder_names(*, implemented: str | None = None) -> Names:
    """Registered builders in registry order; ``implemented``: ``SIMULATOR`` or ``ENGINE``."""
    return Names(b.name for b in BUILDERS if implemented is None or implemented in b.implemented_in)


__all__ = [
    "FIXED_TREE",
    "SAMPLED_DRAFT",
    "SIMULATOR",
    "PROCEDURE",
    "FAST",
    "SETTINGS",
    "ENGINE",
    "ENGINE_BATCHED",
    "PLACES",
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
