"""``exitlaw bench ddtree``'s run: one target + DFlash drafter pair loaded into exitlaw and into
DDTree's own engine, the weights checked bit-identical, both engines timed side by side
(:func:`.side_by_side.run_side_by_side`) and the provenance of both recorded.

DDTree is imported from a local clone (:mod:`.ddtree_reference`, nothing is downloaded); the
commits come from :func:`exitlaw.theory.infra.provenance.git_commit`, taken before the run (the code
that is timed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from exitlaw.engine.bench.ddtree_reference import SHIMS, check_same_weights, load_reference_models
from exitlaw.engine.bench.side_by_side import SideBySideConfig, machine_info, run_side_by_side
from exitlaw.engine.models.checkpoint import load_pair
from exitlaw.theory.infra.provenance import git_commit

REPO = Path(__file__).resolve().parents[2]


def commit_and_dirty(path: str | Path) -> tuple[str | None, bool | None]:
    """``(commit, uncommitted tracked changes)`` of the checkout holding ``path``; ``(None, None)``
    outside one."""
    commit = git_commit(path)
    if commit == "unknown":
        return None, None
    return commit.removesuffix("-dirty"), commit.endswith("-dirty")


def run_ddtree_bench(
    ref,
    target_dir: str | Path,
    draft_dir: str | Path,
    prompts: Sequence[Sequence[int]],
    cfg: SideBySideConfig,
    *,
    ddtree_commit: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Load the pair into both engines (float32), check the weights are identical, run every
    comparison of ``cfg`` and return the results with machine and commit provenance."""
    target, drafter = load_pair(target_dir, draft_dir, dtype=torch.float32)
    load_reference_models(ref, target_dir, draft_dir, dtype=torch.float32)
    compared = check_same_weights(target, drafter, ref.target, ref.drafter)
    commit, dirty = commit_and_dirty(REPO)  # before the run: the code that is timed
    machine_before = machine_info()
    res = run_side_by_side(target, drafter, ref, prompts, cfg, progress=progress)
    res.update(
        {
            "machine": machine_info(),
            "machine_before": machine_before,
            "exitlaw_commit": commit,
            "exitlaw_uncommitted_changes": dirty,
            "ddtree_commit": ddtree_commit or commit_and_dirty(ref.path)[0],
            "ddtree_path": str(ref.path),
            "shims": list(SHIMS),
            "ddtree_cpp_compact": ref.cpp_compact,
            "weights_identical": compared,
            "target": str(target_dir),
            "draft": str(draft_dir),
        }
    )
    return res
