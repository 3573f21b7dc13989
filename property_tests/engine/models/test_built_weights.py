"""Model sizes as one dataclass (issue 47: :class:`StackSizes`, held by ``LMSizes``, ``TinySpec`` and the
mini ``TargetSpec``) build the same models: every tensor's shape and a hash of its bytes.

``fixtures/built_weights.json`` was written before the sizes were nested (commit f7aef5c, when the tiny
pair and the mini target spelled their sizes as flat fields): the tiny target of each family and the
tiny drafter at the default and the half-width spec (seed 3), and the mini target of the quick and
deep presets and of the test suite's micro spec (seed 7).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from exitlaw.engine.models.tiny import TinySpec, build_tiny_drafter, build_tiny_target  # noqa: E402
from exitlaw.paper_repro.mini.config import PRESETS  # noqa: E402
from exitlaw.paper_repro.mini.target import build_target  # noqa: E402
from helpers.mini_configs import MICRO_TARGET  # noqa: E402
from helpers.tiny_specs import SMALL_SPEC  # noqa: E402

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "built_weights.json").read_text())
SPECS = {"default": TinySpec(), "small": SMALL_SPEC}


def _fingerprint(model) -> dict:
    """Each tensor's shape and the first 16 hex digits of the SHA-256 of its bytes."""
    return {
        k: [
            list(v.shape),
            hashlib.sha256(v.detach().contiguous().numpy().tobytes()).hexdigest()[:16],
        ]
        for k, v in model.state_dict().items()
    }


@pytest.mark.parametrize("family", ["qwen3", "llama", "qwen3_moe", "gemma4"])
@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_tiny_target_is_built_as_before(name, family):
    got = _fingerprint(build_tiny_target(SPECS[name], 3, family))
    assert got == FIXTURE["tiny_target"][f"{name}/{family}"]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_tiny_drafter_is_built_as_before(name):
    drafter = build_tiny_drafter(SPECS[name], 5, 3)
    assert _fingerprint(drafter) == FIXTURE["tiny_drafter"][name]
    c = drafter.config
    assert (c.hidden_size, c.num_hidden_layers, c.intermediate_size) == (
        SPECS[name].target.hidden_size,
        SPECS[name].draft_layers,
        SPECS[name].target.intermediate_size,
    )


def test_the_mini_target_is_built_as_before():
    for name in ("quick", "deep"):
        cfg = PRESETS[name]
        got = _fingerprint(build_target(cfg.target, cfg.vocab_size, 7))
        assert got == FIXTURE["mini_target"][name], name
    assert _fingerprint(build_target(MICRO_TARGET, 96, 7)) == FIXTURE["mini_target"]["micro"]


def test_the_mini_drafter_is_the_targets_stack_with_its_own_depth_and_mlp():
    cfg = PRESETS["deep"]
    d = cfg.drafter_sizes()
    assert (d.num_layers, d.intermediate_size) == (cfg.draft_layers, cfg.draft_intermediate)
    assert d.but(num_layers=0, intermediate_size=0) == cfg.target.sizes.but(
        num_layers=0, intermediate_size=0
    )
