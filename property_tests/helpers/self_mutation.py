"""A curated self-mutation check: plant realistic one-line bugs in core code, one at a time, and
assert that the tests named for each bug fail (the mutant is *killed*).

Run from the repository root (minutes; one pytest process per mutant)::

    python property_tests/helpers/self_mutation.py            # every mutant
    python property_tests/helpers/self_mutation.py padding    # mutants whose name contains "padding"

Each mutant is an exact text replacement that must match once in its file. The file is restored
after each run, also on Ctrl-C (a ``.orig`` copy is kept beside it while a mutant is planted; if
a run is killed, ``git checkout`` the file or move the ``.orig`` back). The score is
killed / planted; the exit status is non-zero when a mutant survives.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]  # pytest node ids (relative to the repository root)


_PT = "property_tests/"
MUTANTS = [
    Mutant(
        "padding: pointer doubling one step short for a non-power-of-two size",
        "theory/law.py",
        "for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))))):",
        "for _ in range(max(1, int(np.floor(np.log2(max(n, 2)))))):",
        (
            _PT + "test_planted_bugs.py::test_exit_law_is_independent_of_padding",
            _PT
            + "test_planted_bugs.py::test_twelve_node_chain_padded_to_twelve_has_the_exact_coverage",
        ),
    ),
    Mutant(
        "padding: streamed law kernel one doubling step short",
        "theory/trace/stream.py",
        "for _ in range(max(1, (b - 1).bit_length())):",
        "for _ in range(max(1, (b - 1).bit_length() - 1)):",
        (
            _PT
            + "test_planted_bugs.py::test_streamed_law_kernel_reaches_the_root_of_the_deepest_chain",
        ),
    ),
    Mutant(
        "ties: best-first order breaks score ties toward the deeper prefix (oracle, DDTree)",
        "theory/best_first.py",
        "return (-score, len(ranks), ranks)",
        "return (-score, -len(ranks), ranks)",
        (
            _PT
            + "test_planted_bugs.py::test_oracle_exact_path_set_breaks_ties_toward_the_shallower_prefix",
            _PT
            + "test_planted_bugs.py::test_ddtree_exact_path_set_breaks_ties_toward_the_shallower_prefix",
        ),
    ),
    Mutant(
        "draws: simulated inverse-CDF with searchsorted(side='left')",
        "simulate/randomness.py",
        'i = int(np.searchsorted(cdf, u, side="right"))',
        'i = int(np.searchsorted(cdf, u, side="left"))',
        (
            _PT
            + "test_planted_bugs.py::test_draws_at_injected_boundary_uniforms_never_land_on_zero_weight",
        ),
    ),
    Mutant(
        "draws: engine inverse-CDF with searchsorted(right=False)",
        "engine/decode/verifiers/draws.py",
        "i = torch.searchsorted(c, u, right=True)",
        "i = torch.searchsorted(c, u, right=False)",
        (
            _PT
            + "test_planted_bugs.py::test_engine_draws_at_injected_boundary_uniforms_never_land_on_zero_weight",
        ),
    ),
    Mutant(
        "commit: drafter gets the hidden states of nodes 0..k-1, not the accepted path",
        "engine/decode/loop.py",
        "idx = index if on else torch.as_tensor(path, device=step.hidden.device)",
        "idx = torch.arange(len(path), device=step.hidden.device)",
        (
            _PT
            + "test_planted_bugs.py::test_drafter_context_equals_a_causal_prefill_of_the_committed_tokens",
        ),
    ),
    Mutant(
        "normalisation: weight-norm tree gives a dead tree uniform weight",
        "engine/training/law.py",
        "return torch.where(per_tree[:, None] > 0, s / safe(per_tree)[:, None], zero) / s.shape[0]",
        "return torch.where(per_tree[:, None] > 0, s / safe(per_tree)[:, None], "
        "nonroot.to(s.dtype) / nonroot.sum(-1, keepdim=True).clamp(min=1)) / s.shape[0]",
        (
            _PT
            + "engine/training/test_objectives.py::test_weights_equal_the_hand_computed_formula_with_a_dead_tree_in_the_batch",
            _PT
            + "engine/training/test_objectives.py::test_a_batch_of_dead_trees_gets_zero_weights_under_every_normalisation",
        ),
    ),
    Mutant(
        "trace: a JSON true accepted as exit node 1",
        "theory/trace/format.py",
        "if exit_node is not None and not (_is_int(exit_node) and",
        "if exit_node is not None and not (isinstance(exit_node, int) and",
        (_PT + "test_malformed_inputs.py::test_bad_trace_file_names_the_line_in_read_trace",),
    ),
    Mutant(
        "validation: concrete PaddedTree edges not checked",
        "theory/law.py",
        "elif isinstance(tree, PaddedTree) and not _is_traced(tree.parent, tree.valid):",
        "elif False:",
        (_PT + "test_malformed_inputs.py::test_bad_api_input_is_a_named_error",),
    ),
    Mutant(
        "validation: atol not checked (NaN disables every row check)",
        "theory/distributions.py",
        "    if not np.isfinite(atol) or atol < 0:\n",
        "    if atol < 0:\n",
        (_PT + "test_malformed_inputs.py::test_bad_api_input_is_a_named_error",),
    ),
    Mutant(
        "resume: generation temperature not compared",
        "engine/training/run.py",
        '"gen_temperature": spec.generation.temperature,',
        "",
        (
            _PT
            + "engine/training/test_strict_checkpoints_and_resume.py::test_resume_with_a_different_setting_is_refused_naming_it",
        ),
    ),
    Mutant(
        "atomic: trace writer renames without its end marker",
        "theory/trace/format.py",
        'self._fh.write(json.dumps({END_KEY: SCHEMA, "rounds": self._count}) + "\\n")',
        "pass",
        (_PT + "theory/test_trace_and_law_cli.py::test_writer_refuses_to_overwrite",),
    ),
    Mutant(
        "checkpoints: a corrupt latest checkpoint is used anyway",
        "engine/training/checkpoint.py",
        "        reason = verify_checkpoint(p)\n",
        "        reason = None\n",
        (
            _PT
            + "engine/training/test_strict_checkpoints_and_resume.py::test_a_corrupt_latest_checkpoint_falls_back_to_the_previous_one_loudly",
        ),
    ),
]


def check_table() -> list[str]:
    """Problems with the table: a replacement that does not match exactly once, a test file that is missing."""
    problems = []
    for m in MUTANTS:
        text = (ROOT / m.file).read_text(encoding="utf-8")
        if text.count(m.old) != 1:
            problems.append(f"{m.name}: {m.old!r} occurs {text.count(m.old)} times in {m.file}")
        for t in m.tests:
            if not (ROOT / t.split("::")[0]).is_file():
                problems.append(f"{m.name}: test file {t.split('::')[0]} is missing")
    return problems


def run_mutant(m: Mutant, timeout: float = 900) -> tuple[bool, float, str]:
    """Plant ``m``, run its tests, restore; ``(killed, seconds, last output line)``."""
    path = ROOT / m.file
    original = path.read_text(encoding="utf-8")
    backup = path.with_name(path.name + ".orig")
    shutil.copyfile(path, backup)
    t0 = time.perf_counter()
    try:
        path.write_text(original.replace(m.old, m.new, 1), encoding="utf-8")
        env = {**os.environ, "HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "dev")}
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *m.tests],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        last = (proc.stdout.strip().splitlines() or [""])[-1]
        return proc.returncode != 0, time.perf_counter() - t0, last
    finally:
        path.write_text(original, encoding="utf-8")
        backup.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    problems = check_table()
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    chosen = [m for m in MUTANTS if not argv or any(a in m.name for a in argv)]
    killed = 0
    for m in chosen:
        dead, secs, last = run_mutant(m)
        killed += dead
        print(f"{'KILLED  ' if dead else 'SURVIVED'} {secs:6.1f}s  {m.name}  [{last}]", flush=True)
    print(f"score: {killed}/{len(chosen)} mutants killed")
    return 0 if killed == len(chosen) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
