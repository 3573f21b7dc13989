"""``exitlaw prove``: load a verifier by its ``MODULE:CALLABLE`` spec and run the proof its form calls
for (a sampled-draft rule, two rounds, a raw verifier over a numpy Generator, or the symbolic proof of
a fixed-tree procedure), each mode from its own module, with each form's default sizes."""

from __future__ import annotations

from typing import Any

from exitlaw.simulate.kit.conformance import load_verifier
from exitlaw.simulate.prove.prover import format_proof, load_procedure, prove
from exitlaw.simulate.prove.raw import prove_raw, takes_generator
from exitlaw.simulate.prove.rounds import format_rounds, prove_two_rounds
from exitlaw.simulate.prove.sampled import format_marginal, prove_marginal


def run_prove(
    spec: str,
    *,
    mode: str = "conditional",
    rounds: int = 1,
    raw: bool = False,
    every_child_order: bool = False,
    thorough: bool = False,
    max_nodes: int | None = None,
    vocab: int | None = None,
    points: int = 4,
    seed: int = 0,
) -> tuple[Any, str]:
    """``exitlaw prove``: load ``spec`` (``MODULE:CALLABLE``) and run the proof its form calls for --
    a sampled-draft rule (``mode="marginal"``), two rounds (``rounds=2``), a raw verifier over a numpy
    Generator (``raw`` or a third parameter named ``rng``), else the symbolic proof -- with each
    form's default sizes. Returns the report (``to_json()``, ``exit_code``) and its text."""
    if rounds == 2 and (mode == "marginal" or raw or every_child_order):
        raise ValueError(
            "--rounds 2 applies to fixed-tree procedures f(tree, rows, rand): not with --mode marginal, "
            "--raw or --every-child-order"
        )
    small = dict(name=spec, max_nodes=max_nodes or 3, vocab=vocab or 2, seed=seed)
    if mode == "marginal":
        rep = prove_marginal(load_verifier(spec), **small)
        return rep, format_marginal(rep)
    proc = load_procedure(spec, child_order=every_child_order)
    if rounds == 2:
        rep = prove_two_rounds(proc, **small)
        return rep, format_rounds(rep)
    if raw or takes_generator(proc):
        if every_child_order:
            raise ValueError(
                "--every-child-order applies to procedures over the randomness interface, not to "
                "raw numpy Generator verifiers"
            )
        small.update(vocab=vocab or 3)
        rep = prove_raw(proc, search_points=points, **small)
    else:
        size = max_nodes or (8 if thorough else 6)
        rep = prove(
            proc,
            name=spec,
            max_nodes=size,
            vocab=vocab or 3,
            every_child_order=every_child_order,
            seed=seed,
        )
    return rep, format_proof(rep)


__all__ = ["run_prove"]
