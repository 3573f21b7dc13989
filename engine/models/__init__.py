"""Models in their released on-disk formats: the target with tree attention, the DFlash drafter, attention windows, configs, strict checkpoints, tiny models and tokenizers.

Names from modules that import torch load on first access (``exitlaw --help`` reads the model families).
"""

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

from .config import causal_lm_config, FAMILIES, LMSizes, QWEN3_4B, qwen3_config
from .tiny_tokenizer import (
    build_tokenizer,
    chat_style,
    ChatStyle,
    GEMMA_TEMPLATE,
    LLAMA3_TEMPLATE,
    QWEN3_TEMPLATE,
    stop_token_ids,
    STYLES,
)

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
        apply_rope,
        default_target_layer_ids,
        DFlashConfig,
        DFlashDrafter,
        DraftCache,
        expected_tensor_names,
        RMSNorm,
        rope_cos_sin,
    )
    from .target import (
        batch_attention_mask,
        check_transformers_version,
        compact_rows_,
        SUPPORTED_TRANSFORMERS,
        TargetModel,
        TargetStep,
        tree_attention_mask,
    )
    from .tiny import (
        build_tiny_drafter,
        build_tiny_target,
        FAMILY_STYLE,
        SPECIAL_TOKENS,
        TinySpec,
        write_tiny_models,
    )


# PEP 562: names whose module imports torch load on first access (static tools read the block above)
_LAZY = {
    "layer_windows": ("attention_window", "layer_windows"),
    "is_windowed": ("attention_window", "is_windowed"),
    "full_cache": ("attention_window", "full_cache"),
    "to_additive": ("attention_window", "to_additive"),
    "in_window": ("attention_window", "in_window"),
    "layer_masks": ("attention_window", "layer_masks"),
    "mask_to": ("attention_window", "mask_to"),
    "load_drafter": ("checkpoint", "load_drafter"),
    "save_drafter": ("checkpoint", "save_drafter"),
    "load_target": ("checkpoint", "load_target"),
    "load_pair": ("checkpoint", "load_pair"),
    "check_drafter_tensors": ("checkpoint", "check_drafter_tensors"),
    "check_pair": ("checkpoint", "check_pair"),
    "checkpoint_fingerprint": ("checkpoint", "checkpoint_fingerprint"),
    "check_loading_info": ("checkpoint", "check_loading_info"),
    "resolve_checkpoint": ("checkpoint", "resolve_checkpoint"),
    "DFlashConfig": ("dflash", "DFlashConfig"),
    "DFlashDrafter": ("dflash", "DFlashDrafter"),
    "DraftCache": ("dflash", "DraftCache"),
    "RMSNorm": ("dflash", "RMSNorm"),
    "rope_cos_sin": ("dflash", "rope_cos_sin"),
    "apply_rope": ("dflash", "apply_rope"),
    "default_target_layer_ids": ("dflash", "default_target_layer_ids"),
    "expected_tensor_names": ("dflash", "expected_tensor_names"),
    "TargetModel": ("target", "TargetModel"),
    "TargetStep": ("target", "TargetStep"),
    "tree_attention_mask": ("target", "tree_attention_mask"),
    "batch_attention_mask": ("target", "batch_attention_mask"),
    "compact_rows_": ("target", "compact_rows_"),
    "check_transformers_version": ("target", "check_transformers_version"),
    "SUPPORTED_TRANSFORMERS": ("target", "SUPPORTED_TRANSFORMERS"),
    "TinySpec": ("tiny", "TinySpec"),
    "write_tiny_models": ("tiny", "write_tiny_models"),
    "build_tiny_target": ("tiny", "build_tiny_target"),
    "build_tiny_drafter": ("tiny", "build_tiny_drafter"),
    "SPECIAL_TOKENS": ("tiny", "SPECIAL_TOKENS"),
    "FAMILY_STYLE": ("tiny", "FAMILY_STYLE"),
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "layer_windows",
    "is_windowed",
    "full_cache",
    "to_additive",
    "in_window",
    "layer_masks",
    "mask_to",
    "load_drafter",
    "save_drafter",
    "load_target",
    "load_pair",
    "check_drafter_tensors",
    "check_pair",
    "checkpoint_fingerprint",
    "check_loading_info",
    "resolve_checkpoint",
    "LMSizes",
    "QWEN3_4B",
    "FAMILIES",
    "qwen3_config",
    "causal_lm_config",
    "DFlashConfig",
    "DFlashDrafter",
    "DraftCache",
    "RMSNorm",
    "rope_cos_sin",
    "apply_rope",
    "default_target_layer_ids",
    "expected_tensor_names",
    "TargetModel",
    "TargetStep",
    "tree_attention_mask",
    "batch_attention_mask",
    "compact_rows_",
    "check_transformers_version",
    "SUPPORTED_TRANSFORMERS",
    "TinySpec",
    "write_tiny_models",
    "build_tiny_target",
    "build_tiny_drafter",
    "SPECIAL_TOKENS",
    "FAMILY_STYLE",
    "ChatStyle",
    "STYLES",
    "chat_style",
    "build_tokenizer",
    "stop_token_ids",
    "QWEN3_TEMPLATE",
    "LLAMA3_TEMPLATE",
    "GEMMA_TEMPLATE",
]
