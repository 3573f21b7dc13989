"""`first_argmax` is torch's ``argmax(-1)`` exactly: ties, infinities, NaN, dtypes and shapes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.engine.decode.reductions import first_argmax

VALUES = st.sampled_from([0.0, 1.0, -1.0, 2.5, float("inf"), float("-inf"), float("nan")])


@settings(max_examples=200, deadline=None)
@given(
    rows=st.integers(1, 4),
    width=st.integers(1, 9),
    data=st.data(),
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_first_argmax_is_torch_argmax(rows, width, data, dtype):
    vals = data.draw(st.lists(VALUES, min_size=rows * width, max_size=rows * width))
    x = torch.tensor(vals, dtype=dtype).reshape(rows, width)
    got = first_argmax(x)
    assert got.dtype == torch.int64 and got.shape == (rows,)
    assert torch.equal(got, x.argmax(-1))


@pytest.mark.parametrize("shape", [(512,), (8, 33, 512), (2, 3, 4, 5)])
def test_first_argmax_keeps_leading_shape_and_views(shape):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    x.view(-1)[::7] = x.max()  # many ties with the maximum: the first one wins
    assert torch.equal(first_argmax(x), x.argmax(-1))
    t = x.transpose(0, -1) if x.ndim > 1 else x  # a non-contiguous view
    assert torch.equal(first_argmax(t), t.argmax(-1))


def test_other_dtypes_take_torch():
    x = torch.tensor([[1.0, 3.0, 3.0]], dtype=torch.bfloat16)
    assert torch.equal(first_argmax(x), torch.tensor([1]))
    assert np.issubdtype(first_argmax(torch.ones(2, 3)).numpy().dtype, np.int64)
