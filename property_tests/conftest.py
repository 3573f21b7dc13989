"""Hypothesis profiles and suite-wide settings and fixtures.

Profiles (choose with ``HYPOTHESIS_PROFILE``; default ``ci``):
``dev`` quick local iteration, ``ci`` the CI run, ``thorough`` many examples.

JAX runs in float64 throughout the suite (exactness checks compare to 1e-12):
``JAX_ENABLE_X64`` is set here, before any test module imports JAX, so this
file imports neither JAX nor torch and an engine-only install can run the
engine's tests.

Shared fixtures: ``tiny`` (a random tiny Qwen3 target + DFlash drafter written
in the real on-disk formats; a module picks its seed with ``TINY_SEED``),
``pair`` (that pair loaded), and an autouse guard that runs torch with one
intra-op thread (tiny tensors on a shared 2-core machine only stall on more).
"""

import os
import sys

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("JAX_ENABLE_X64", "1")

_common = dict(
    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.register_profile("dev", max_examples=20, **_common)
settings.register_profile("ci", max_examples=60, **_common)
settings.register_profile("thorough", max_examples=600, **_common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """One torch intra-op thread for every test that has torch loaded (restored afterwards)."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


_TINY_CACHE: dict[int, tuple] = {}


@pytest.fixture(scope="module")
def tiny(request, tmp_path_factory):
    """``(target_dir, draft_dir)`` of the random tiny pair with the module's ``TINY_SEED`` (default 0)."""
    from exitlaw.engine.models.tiny import write_tiny_models

    seed = getattr(request.module, "TINY_SEED", 0)
    if seed not in _TINY_CACHE:
        _TINY_CACHE[seed] = write_tiny_models(
            tmp_path_factory.mktemp(f"tiny_seed{seed}"), seed=seed
        )
    return _TINY_CACHE[seed]


@pytest.fixture(scope="module")
def pair(tiny):
    """The tiny ``(TargetModel, DFlashDrafter)`` loaded through the real checkpoint path (fresh per module)."""
    from exitlaw.engine.models.checkpoint import load_pair

    return load_pair(*tiny)
