"""Fixtures shared by the kit's tests."""

import pytest

from exitlaw.simulate.stats import seed_for


@pytest.fixture
def seed_below(request):
    """``seed_below(n)``: a seed in ``0..n-1`` derived from the test's id (stable across runs and machines)."""

    def seed(n: int) -> int:
        return int(seed_for(request.node.nodeid).generate_state(1)[0] % n)

    return seed
