"""What one call of a verifier stage asks of the device, counted on any device (docs/design.md §1.12):
the ops it dispatches, how many of them launch work, its host reads, its host-to-device copies, and the
op/shape sequence (so trees of one budget can be checked for one replayable sequence).

* **top-level ops**: ATen ops the call dispatches directly (``torch.profiler`` events with no ATen
  parent), views and allocations included;
* **launching ops**: top-level ops that do work on the device: all but the pure view / metadata /
  allocation ops in :data:`NO_WORK` (an op such as ``reshape`` or ``to`` counts when it copied, i.e.
  when an op outside :data:`NO_WORK` ran inside it). A proxy for kernel launches: a composite op such
  as ``softmax`` counts once here and may launch a few kernels on a GPU;
* **host reads**: calls that hand a tensor's values to Python (``tolist``, ``item``, ``int()``,
  ``float()``, ``bool()``, ``numpy``): each is a device-to-host synchronisation on an accelerator;
* **host-to-device copies**: tensors made from host data (``torch.tensor``, ``torch.as_tensor``) or
  moved from the CPU to another device inside the call: each is a blocking copy on an accelerator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode
from torch.profiler import ProfilerActivity, profile

# ATen ops that only make views, read metadata or allocate (no kernel runs on the device)
NO_WORK = frozenset(
    f"aten::{name}"
    for name in (
        "view",
        "reshape",
        "_reshape_alias",
        "_unsafe_view",
        "unsqueeze",
        "squeeze",
        "slice",
        "select",
        "expand",
        "as_strided",
        "t",
        "numpy_T",
        "transpose",
        "permute",
        "narrow",
        "detach",
        "alias",
        "unflatten",
        "flatten",
        "split",
        "unbind",
        "chunk",
        "empty",
        "empty_like",
        "empty_strided",
        "lift_fresh",
        "resolve_conj",
        "resolve_neg",
        "to",
        "_to_copy_noop",
        "contiguous",
    )
)
HOST_READS = frozenset({"tolist", "item", "__int__", "__float__", "__bool__", "__index__", "numpy"})
FROM_HOST = frozenset({"tensor", "as_tensor"})


@dataclass(frozen=True)
class OpCount:
    """One call's counts (see the module docstring); ``sequence``: its top-level ops with their input
    shapes, in order (equal sequences on two trees: one replayable graph serves both)."""

    top_level: int
    launching: int
    host_reads: int
    host_to_device: int
    sequence: tuple

    def row(self) -> dict[str, int]:
        return {
            "top_level_ops": self.top_level,
            "launching_ops": self.launching,
            "host_reads": self.host_reads,
            "host_to_device": self.host_to_device,
        }


class _HostTraffic(TorchFunctionMode):
    """Counts host reads and host-to-device copies as the call makes them."""

    def __init__(self):
        super().__init__()
        self.reads = 0
        self.copies = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in HOST_READS:
            self.reads += 1
        elif name in FROM_HOST:
            self.copies += 1
        elif name in ("to", "copy_", "cuda") and args and isinstance(args[0], torch.Tensor):
            src = args[1] if name == "copy_" and len(args) > 1 else args[0]
            dst = _target_device(name, args, kwargs)
            if src.device.type == "cpu" and dst is not None and dst.type != "cpu":
                self.copies += 1
        return func(*args, **kwargs)


def _target_device(name: str, args, kwargs) -> torch.device | None:
    if name == "cuda":
        return torch.device("cuda")
    if name == "copy_":
        return args[0].device
    for a in (*args[1:], kwargs.get("device")):
        if isinstance(a, (str, torch.device)):
            try:
                return torch.device(a)
            except RuntimeError:
                return None
        if isinstance(a, torch.Tensor):
            return a.device
    return None


def _launches(event) -> bool:
    """True when ``event`` or an ATen op inside it does device work (see :data:`NO_WORK`)."""
    if event.name not in NO_WORK:
        return True
    return any(_launches(c) for c in event.cpu_children if c.name.startswith("aten::"))


def count_ops(fn: Callable[[], Any], host_traffic: bool = True) -> OpCount:
    """Run ``fn()`` once under ``torch.profiler`` (CPU activity: every dispatched op, on any device) and a
    host-traffic mode, and count what it asked of the device. ``host_traffic=False`` leaves the mode out
    (a ``torch.compile``d function would recompile under it) and reports -1 host reads and copies."""
    traffic = _HostTraffic()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        if host_traffic:
            with traffic:
                fn()
        else:
            fn()
    events = [e for e in prof.events() if e.name.startswith("aten::")]
    top = [e for e in events if e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::")]
    top.sort(key=lambda e: e.time_range.start)
    sequence = tuple(
        (e.name, tuple(tuple(s) if isinstance(s, list) else s for s in e.input_shapes)) for e in top
    )
    return OpCount(
        top_level=len(top),
        launching=sum(_launches(e) for e in top),
        host_reads=traffic.reads if host_traffic else -1,
        host_to_device=traffic.copies if host_traffic else -1,
        sequence=sequence,
    )


__all__ = ["OpCount", "count_ops", "NO_WORK"]
