"""The fused RMSNorms against their twins over every configuration their guards accept, not one default.

Two guards pick a fused norm: :func:`~exitlaw.engine.models.layer_ops.norm_for` (the lean target forward)
takes :func:`~exitlaw.engine.models.layer_ops.fused_rms_norm` for float32 on the CPU, and the DFlash
drafter's :class:`~exitlaw.engine.models.dflash.RMSNorm` takes it under the same condition and a float32
``F.rms_norm`` without the weight otherwise. Over every floating dtype the CPU runs, eps values from
1e-12 to 0.1, widths 1..300, and contiguous and strided inputs (a transposed view, a column slice, a
broadcast row), each path is compared

* bit for bit with its twin, :func:`~exitlaw.engine.models.layer_ops.rms_norm` (Qwen3RMSNorm's
  operations one by one: normalise in float32, cast back, then the weight), and
* with the plain formula ``w * x / sqrt(mean(x^2) + eps)`` in float64, at the tolerance the dtype's
  rounding allows (:data:`RTOL`).

Every norm class the lean guard accepts (``SUPPORTED_NORMS``) is checked to be that formula with no weight
offset (a Gemma-style ``1 + w`` norm let through would fail), and coverage tests ask both guards about
every floating dtype on the CPU and on another device: a fused choice without a twin case here fails.
"""

from __future__ import annotations

import importlib

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.engine.models import dflash
from exitlaw.engine.models.layer_ops import fused_rms_norm, norm_for, rms_norm
from exitlaw.engine.models.lean_forward import SUPPORTED_NORMS

# dtypes the CPU computes a norm in; every one is a twin case below
DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
# relative tolerance of a norm's output against the float64 formula: the norm runs in float32 and its
# output is rounded to the dtype (bfloat16 8 bits, float16 11 bits) once for the cast and once for the weight
RTOL = {torch.float32: 2e-6, torch.float64: 2e-6, torch.bfloat16: 2e-2, torch.float16: 2e-3}
EPS = (1e-12, 1e-6, 1e-5, 1e-3, 0.1)
LAYOUTS = ("contiguous", "transposed", "column-slice", "broadcast-row")
# configurations where a guard takes the fused float32 kernel: (dtype, device type) with a twin case here
FUSED_TWIN_CASES = {(torch.float32, "cpu")}


def _input(layout: str, rows: int, width: int, scale: float, dtype, g) -> torch.Tensor:
    """``[rows, width]`` values of ``dtype`` in ``layout`` (all but the first are non-contiguous views)."""
    if layout == "contiguous":
        x = torch.randn(rows, width, generator=g)
    elif layout == "transposed":
        x = torch.randn(width, rows, generator=g).t()
    elif layout == "column-slice":
        x = torch.randn(rows, 2 * width + 1, generator=g)[:, 1::2]
    else:
        x = torch.randn(1, width, generator=g).expand(rows, width)
    x = (x * scale).to(dtype)
    assert x.shape == (rows, width)
    return x


def _formula(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """``w * x / sqrt(mean(x^2) + eps)`` in float64 (the plain reading)."""
    x64, w64 = x.double(), w.double()
    return w64 * x64 / torch.sqrt((x64 * x64).mean(-1, keepdim=True) + eps)


def _close_to_formula(y: torch.Tensor, x, w, eps) -> None:
    want = _formula(x, w, eps)
    err = (y.double() - want).abs()
    bound = RTOL[y.dtype] * (want.abs() + w.double().abs())  # w |x| / rms <= |w| sqrt(width)
    assert bool((err <= bound).all()), (
        f"{y.dtype}: max error {float(err.max()):.3g} past rtol {RTOL[y.dtype]}"
    )


configs = dict(
    dtype=st.sampled_from(DTYPES),
    eps=st.sampled_from(EPS),
    width=st.one_of(st.sampled_from([1, 2, 8, 64, 128, 257]), st.integers(1, 300)),
    rows=st.integers(1, 12),
    scale=st.sampled_from([1e-3, 1.0, 30.0, 1e3]),
    layout=st.sampled_from(LAYOUTS),
    seed=st.integers(0, 2**16),
)


@settings(max_examples=150, deadline=None)
@given(**configs)
def test_the_lean_norm_the_guard_picks_equals_the_transformers_operations_and_the_formula(
    dtype, eps, width, rows, scale, layout, seed
):
    g = torch.Generator().manual_seed(seed)
    x = _input(layout, rows, width, scale, dtype, g)
    w = (1.0 + 0.5 * torch.randn(width, generator=g)).to(dtype)
    twin = rms_norm(x, w, eps)
    for allow in (True, False):
        norm = norm_for(x, allow)
        assert norm is (fused_rms_norm if allow and dtype == torch.float32 else rms_norm)
        y = norm(x, w, eps)
        assert y.dtype == twin.dtype and y.shape == x.shape
        assert torch.equal(y, twin), f"{norm.__name__} differs from rms_norm ({dtype}, {layout})"
    _close_to_formula(twin, x, w, eps)
    # the fused kernel itself, wherever it is taken, on the same non-contiguous layout
    if (dtype, "cpu") in FUSED_TWIN_CASES:
        assert torch.equal(fused_rms_norm(x, w, eps), rms_norm(x, w, eps))


@settings(max_examples=150, deadline=None)
@given(**configs, heads=st.integers(1, 3))
def test_the_drafter_norm_equals_the_transformers_operations_and_the_formula_for_every_dtype(
    dtype, eps, width, rows, scale, layout, seed, heads
):
    """DFlash's RMSNorm on ``[rows, width]`` and on a ``[1, rows, heads, width]`` q/k-norm layout."""
    g = torch.Generator().manual_seed(seed)
    x = _input(layout, rows, width, scale, dtype, g)
    norm = dflash.RMSNorm(width, eps).to(dtype)
    with torch.no_grad():
        norm.weight.copy_(1.0 + 0.5 * torch.randn(width, generator=g))
    with torch.inference_mode():
        y = norm(x)
        x4 = x[None, :, None, :].expand(1, rows, heads, width)  # heads share a row: strided
        y4 = norm(x4)
    twin = rms_norm(x, norm.weight.detach(), eps)
    assert y.dtype == dtype and torch.equal(y, twin), f"DFlash RMSNorm ({dtype}, {layout})"
    assert torch.equal(y4, rms_norm(x4, norm.weight.detach(), eps)), f"4D ({dtype}, {layout})"
    _close_to_formula(y, x, norm.weight.detach(), eps)


def _norm_class(name: str):
    """The transformers class called ``name`` (``Qwen3RMSNorm`` -> ``transformers.models.qwen3``)."""
    family = name.removesuffix("RMSNorm").lower()
    module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    return getattr(module, name)


@pytest.mark.parametrize("name", SUPPORTED_NORMS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_every_norm_class_the_lean_guard_accepts_is_the_twin_with_no_weight_offset(name, dtype):
    """The lean forward reads a norm as ``(weight, variance_epsilon)`` and applies :func:`rms_norm`; each
    accepted class must compute exactly that (a ``(1 + w)`` offset, a float32 weight product or another
    eps placement would fail here)."""
    width, eps = 48, 1e-5
    g = torch.Generator().manual_seed(3)
    module = _norm_class(name)(width, eps=eps).to(dtype)
    with torch.no_grad():
        module.weight.copy_(0.3 * torch.randn(width, generator=g))  # far from 1: an offset shows
    x = (4.0 * torch.randn(5, width, generator=g)).to(dtype)
    with torch.inference_mode():
        want = module(x)
    got = rms_norm(x, module.weight.detach(), float(module.variance_epsilon))
    assert torch.equal(got, want), f"{name} ({dtype}) is not rms_norm of its weight and eps"
    _close_to_formula(got, x, module.weight.detach(), eps)


def _floating_dtypes() -> list[torch.dtype]:
    out = {v for v in vars(torch).values() if isinstance(v, torch.dtype) and v.is_floating_point}
    return sorted(out, key=str)


@pytest.mark.parametrize("device", ["cpu", "meta"])  # meta: a device that is not the CPU
def test_every_configuration_a_norm_guard_fuses_has_a_twin_case(device, monkeypatch):
    """Coverage: both guards asked about every floating dtype torch knows; a fused choice outside
    :data:`FUSED_TWIN_CASES` (the cases twin-tested above) fails, as does a twin dtype missing from the
    generated configurations."""
    taken = []
    real = dflash.fused_rms_norm
    monkeypatch.setattr(
        dflash,
        "fused_rms_norm",
        lambda x, *a: taken.append((x.dtype, x.device.type)) or real(x, *a),
    )
    untested = []
    for dtype in _floating_dtypes():
        try:
            x = torch.zeros(2, 4, dtype=dtype, device=device)
        except (RuntimeError, TypeError):
            continue
        for allow in (True, False):
            if norm_for(x, allow) is fused_rms_norm and (dtype, device) not in FUSED_TWIN_CASES:
                untested.append(("norm_for", dtype, device))
        try:
            with torch.inference_mode():
                dflash.RMSNorm(4, 1e-6).to(dtype=dtype, device=device)(x)
        except (RuntimeError, TypeError, NotImplementedError):
            pass  # a dtype the norm cannot run in at all is not accepted
    untested += [("RMSNorm", dt, dev) for dt, dev in taken if (dt, dev) not in FUSED_TWIN_CASES]
    assert not untested, f"a guard fuses a configuration without a twin case: {untested}"
    assert {dt for dt, _ in FUSED_TWIN_CASES} <= set(DTYPES) == set(RTOL)
