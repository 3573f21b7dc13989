"""Hypothesis profiles and suite-wide settings.

Profiles (choose with ``HYPOTHESIS_PROFILE``; default ``ci``):
``dev`` quick local iteration, ``ci`` the CI run, ``thorough`` many examples.
JAX runs in float64 throughout the suite (exactness checks compare to 1e-12).
"""

import os

import jax
from hypothesis import HealthCheck, settings

jax.config.update("jax_enable_x64", True)

_common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", max_examples=20, **_common)
settings.register_profile("ci", max_examples=60, **_common)
settings.register_profile("thorough", max_examples=600, **_common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
