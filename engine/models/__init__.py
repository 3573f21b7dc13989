"""Models in their released on-disk formats: the target with tree attention, the DFlash drafter, attention windows, configs, strict checkpoints, tiny models and tokenizers.

Names from modules that import torch load on first access (``exitlaw --help`` reads the model families).
"""

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

from . import config, tiny_tokenizer
from .config import *
from .tiny_tokenizer import *

if TYPE_CHECKING:
    from .attention_window import (
        full_cache,
        in_window,
        is_windowed,
        layer_masks,
        layer_windows,
        mask_to,
        to_additive,
    )
    from .checkpoint import (
        check_drafter_tensors,
        check_loading_info,
        check_pair,
        checkpoint_fingerprint,
        load_drafter,
        load_pair,
        load_target,
        resolve_checkpoint,
        save_drafter,
    )
    from .dflash import (
        DFlashConfig,
        DFlashDrafter,
        DraftCache,
        RMSNorm,
        apply_rope,
        default_target_layer_ids,
        expected_tensor_names,
        rope_cos_sin,
    )
    from .target import (
        SUPPORTED_TRANSFORMERS,
        TargetModel,
        TargetStep,
        batch_attention_mask,
        check_transformers_version,
        compact_rows_,
        tree_attention_mask,
    )
    from .tiny import (
        FAMILY_STYLE,
        SPECIAL_TOKENS,
        TinySpec,
        build_tiny_drafter,
        build_tiny_target,
        write_tiny_models,
    )


# PEP 562: names whose module imports torch load on first access (static tools read the block above)
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "attention_window": "full_cache, in_window, is_windowed, layer_masks, layer_windows, mask_to, to_additive",
        "checkpoint": "check_drafter_tensors, check_loading_info, check_pair, checkpoint_fingerprint, load_drafter, load_pair, load_target, resolve_checkpoint, save_drafter",
        "dflash": "apply_rope, default_target_layer_ids, DFlashConfig, DFlashDrafter, DraftCache, expected_tensor_names, RMSNorm, rope_cos_sin",
        "target": "batch_attention_mask, check_transformers_version, compact_rows_, SUPPORTED_TRANSFORMERS, TargetModel, TargetStep, tree_attention_mask",
        "tiny": "build_tiny_drafter, build_tiny_target, FAMILY_STYLE, SPECIAL_TOKENS, TinySpec, write_tiny_models",
    },
)


__all__ = [
    *config.__all__,
    *tiny_tokenizer.__all__,
    "DFlashConfig",
    "DFlashDrafter",
    "DraftCache",
    "FAMILY_STYLE",
    "RMSNorm",
    "SPECIAL_TOKENS",
    "SUPPORTED_TRANSFORMERS",
    "TargetModel",
    "TargetStep",
    "TinySpec",
    "apply_rope",
    "batch_attention_mask",
    "build_tiny_drafter",
    "build_tiny_target",
    "check_drafter_tensors",
    "check_loading_info",
    "check_pair",
    "check_transformers_version",
    "checkpoint_fingerprint",
    "compact_rows_",
    "default_target_layer_ids",
    "expected_tensor_names",
    "full_cache",
    "in_window",
    "is_windowed",
    "layer_masks",
    "layer_windows",
    "load_drafter",
    "load_pair",
    "load_target",
    "mask_to",
    "resolve_checkpoint",
    "rope_cos_sin",
    "save_drafter",
    "to_additive",
    "tree_attention_mask",
    "write_tiny_models",
]
