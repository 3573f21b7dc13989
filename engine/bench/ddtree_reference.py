"""DDTree's own engine (liranringel/ddtree), imported from a local clone, as the side-by-side reference.

Nothing of DDTree's code lives in exitlaw: :func:`load_reference` puts the clone's folder on
``sys.path`` and imports its ``ddtree``, ``dflash`` and ``model`` modules. Its dependencies
(``loguru``, ``datasets``, ...) are not exitlaw dependencies; a missing one is named in the error.

CPU shims (each touches no algorithm; :data:`SHIMS` states them in the results):

* ``cuda_time`` -- DDTree's stage clock calls ``torch.cuda.synchronize()`` then
  ``time.perf_counter()``; on a CPU it is ``time.perf_counter()`` alone.
* ``DynamicCache`` -- DDTree calls the transformers-4 ``crop(max_length)`` (keep the first
  ``max_length`` positions); transformers 5 takes a negative count of positions to drop.
  A subclass restores the old meaning, nothing else.
* Attention: DDTree's benchmark loads the drafter with flash-attention and bfloat16 (CUDA
  only); here both models use SDPA in the dtype of the checkpoint.

:func:`check_same_weights` checks that the reference models and exitlaw's hold bit-identical
tensors (a benchmark of two engines on different weights would compare nothing).
"""

from __future__ import annotations

import importlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch
from transformers import AutoModelForCausalLM, DynamicCache

SHIMS = (
    "cuda_time: time.perf_counter() without torch.cuda.synchronize() (CPU)",
    "DynamicCache.crop(max_length): transformers-4 meaning (keep the first max_length positions) "
    "restored on transformers 5 by a subclass",
    "attention: SDPA for target and drafter in the checkpoint dtype (DDTree's benchmark.py needs CUDA, "
    "flash-attn and bfloat16)",
)
# imported by DDTree's ddtree.py / model/utils.py
NEEDS = ("loguru", "datasets", "numpy", "transformers")


class ReferenceError(RuntimeError):
    """The DDTree clone cannot be used (wrong path, missing dependency, unexpected layout)."""


def crop_to_length(cache, max_length: int) -> None:
    """transformers-4 ``crop(max_length)`` on a transformers-5 cache: keep the first ``max_length``
    positions (a negative ``max_length`` drops ``|max_length|`` from the end, as transformers 4 did)."""
    length = cache.get_seq_length()
    keep = length + max_length if max_length < 0 else max_length
    if length > keep:
        super(type(cache), cache).crop(keep - length)


def legacy_crop_cache_class():
    """A ``DynamicCache`` subclass whose ``crop`` takes the transformers-4 ``max_length``."""

    class LegacyCropCache(DynamicCache):
        def crop(self, max_length: int) -> None:  # noqa: D401 - the shim
            crop_to_length(self, max_length)

    return LegacyCropCache


def cpu_clock() -> float:
    """``cuda_time`` on a CPU: the host clock, no device synchronisation."""
    return time.perf_counter()


@dataclass
class Reference:
    """The imported DDTree modules and the models loaded through them."""

    path: Path
    ddtree: Any  # DDTree's ddtree.py module
    dflash: Any  # DDTree's dflash.py module
    model_pkg: Any  # DDTree's model package
    target: Any = None  # transformers causal LM loaded for DDTree
    drafter: Any = None  # DDTree's DFlashDraftModel
    cpp_compact: bool = False

    def generate(
        self,
        prompt: list[int],
        *,
        method: str,
        budget: int,
        max_new_tokens: int,
        temperature: float,
    ) -> Any:
        """One DDTree call as its ``benchmark.py`` makes it: ``ar`` (``dflash_generate`` with block size 1),
        ``chain`` (``dflash_generate``) or ``ddtree`` (``ddtree_generate`` with ``tree_budget=budget``)."""
        ids = torch.tensor([list(prompt)], dtype=torch.long, device=self.target.device)
        common = dict(
            model=self.drafter,
            target=self.target,
            input_ids=ids,
            mask_token_id=self.drafter.mask_token_id,
            max_new_tokens=max_new_tokens,
            stop_token_ids=None,
            temperature=temperature,
        )
        if method == "ar":
            return self.dflash.dflash_generate(block_size=1, **common)
        if method == "chain":
            return self.dflash.dflash_generate(block_size=self.drafter.block_size, **common)
        if method == "ddtree":
            return self.ddtree.ddtree_generate(
                block_size=self.drafter.block_size, tree_budget=budget, **common
            )
        raise ValueError(f"unknown method {method!r}; choose ar, chain or ddtree")


def _check_clone(path: Path) -> None:
    missing = [
        f
        for f in ("ddtree.py", "dflash.py", "model/__init__.py", "model/dflash.py")
        if not (path / f).is_file()
    ]
    if missing:
        raise ReferenceError(
            f"{path} is not a clone of liranringel/ddtree: missing {', '.join(missing)}"
        )


def _check_dependencies(importer: Callable[[str], Any] = importlib.import_module) -> None:
    missing = []
    for name in NEEDS:
        try:
            importer(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ReferenceError(
            f"DDTree's code needs {', '.join(missing)} (not exitlaw dependencies): "
            f"pip install {' '.join(missing)}"
        )


def load_reference(path: str | Path, *, cpp_compact: bool = True) -> Reference:
    """Import DDTree from the clone at ``path`` and install the CPU shims (:data:`SHIMS`).

    ``cpp_compact`` builds DDTree's inline C++ cache compaction, as its ``benchmark.py`` does
    (``maybe_enable_cpp_compact``); it falls back to its Python compaction if the build fails.
    """
    path = Path(path).expanduser().resolve()
    _check_clone(path)
    _check_dependencies()
    clashing = [
        m
        for m in ("ddtree", "dflash", "model")
        if m in sys.modules
        and not str(getattr(sys.modules[m], "__file__", "") or "").startswith(str(path))
    ]
    if clashing:
        raise ReferenceError(
            f"modules {clashing} are already imported from elsewhere; run the benchmark in a "
            "fresh process"
        )
    sys.path.insert(0, str(path))
    try:
        model_pkg = importlib.import_module("model")
        dflash = importlib.import_module("dflash")
        ddtree = importlib.import_module("ddtree")
    except ImportError as err:
        raise ReferenceError(f"importing DDTree from {path} failed: {err}") from err
    cache_cls = legacy_crop_cache_class()
    for mod in (dflash, ddtree):
        mod.cuda_time = cpu_clock
        mod.DynamicCache = cache_cls
    if cpp_compact:
        ddtree.maybe_enable_cpp_compact(True)
    return Reference(
        path,
        ddtree,
        dflash,
        model_pkg,
        cpp_compact=cpp_compact and ddtree.load_cpp_compact_module() is not None,
    )


def load_reference_models(
    ref: Reference,
    target_dir: str | Path,
    draft_dir: str | Path,
    *,
    dtype: torch.dtype = torch.float32,
) -> Reference:
    """Load the pair with DDTree's loaders (``AutoModelForCausalLM`` / ``DFlashDraftModel.from_pretrained``)."""
    ref.target = AutoModelForCausalLM.from_pretrained(
        str(target_dir), attn_implementation="sdpa", dtype=dtype
    ).eval()
    ref.drafter = ref.model_pkg.DFlashDraftModel.from_pretrained(
        str(draft_dir), attn_implementation="sdpa", dtype=dtype
    ).eval()
    return ref


def _tensors(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v for k, v in module.state_dict().items() if not k.endswith("inv_freq")}


def weight_differences(ours: dict[str, torch.Tensor], theirs: dict[str, torch.Tensor]) -> list[str]:
    """Names of tensors missing on one side, or differing in shape, dtype or any bit."""
    problems = [f"only in exitlaw: {k}" for k in sorted(set(ours) - set(theirs))]
    problems += [f"only in the reference: {k}" for k in sorted(set(theirs) - set(ours))]
    for k in sorted(set(ours) & set(theirs)):
        a, b = ours[k], theirs[k]
        if a.shape != b.shape or a.dtype != b.dtype:
            problems.append(f"{k}: {tuple(a.shape)} {a.dtype} vs {tuple(b.shape)} {b.dtype}")
        elif not torch.equal(
            a.view(torch.uint8) if a.numel() else a, b.view(torch.uint8) if b.numel() else b
        ):
            problems.append(f"{k}: values differ")
    return problems


def check_same_weights(target, drafter, ref_target, ref_drafter) -> dict[str, int]:
    """Raise unless exitlaw's ``target`` (a TargetModel) / ``drafter`` and the reference's models hold
    bit-identical tensors (the drafter's own tensors; the target's, embeddings and head included).
    Returns the number of tensors compared per model."""
    problems = [
        f"target {p}" for p in weight_differences(_tensors(target.model), _tensors(ref_target))
    ]
    ours_d, theirs_d = _tensors(drafter), _tensors(ref_drafter)
    problems += [f"drafter {p}" for p in weight_differences(ours_d, theirs_d)]
    if problems:
        raise ReferenceError(
            "exitlaw and the reference do not hold the same weights: " + "; ".join(problems[:8])
        )
    return {"target": len(_tensors(target.model)), "drafter": len(ours_d)}


__all__ = [
    "Reference",
    "ReferenceError",
    "SHIMS",
    "NEEDS",
    "load_reference",
    "load_reference_models",
    "check_same_weights",
    "weight_differences",
    "crop_to_length",
    "legacy_crop_cache_class",
    "cpu_clock",
]
