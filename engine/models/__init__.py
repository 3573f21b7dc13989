"""Models in their released on-disk formats: the target with tree attention, the DFlash drafter, attention windows, configs, strict checkpoints, tiny models and tokenizers.

Public names load their module on first access.
"""

from exitlaw.theory.module_faces import lazy_exports

_EXPORTS = {
    "layer_windows": "attention_window", "is_windowed": "attention_window", "full_cache": "attention_window",
    "to_additive": "attention_window", "in_window": "attention_window", "layer_masks": "attention_window",
    "mask_to": "attention_window",
    "load_drafter": "checkpoint", "save_drafter": "checkpoint", "load_target": "checkpoint",
    "load_pair": "checkpoint", "check_drafter_tensors": "checkpoint", "check_pair": "checkpoint",
    "checkpoint_fingerprint": "checkpoint", "check_loading_info": "checkpoint",
    "resolve_checkpoint": "checkpoint",
    "LMSizes": "config", "QWEN3_4B": "config", "FAMILIES": "config", "qwen3_config": "config",
    "causal_lm_config": "config",
    "DFlashConfig": "dflash", "DFlashDrafter": "dflash", "DraftCache": "dflash", "RMSNorm": "dflash",
    "rope_cos_sin": "dflash", "apply_rope": "dflash", "default_target_layer_ids": "dflash",
    "expected_tensor_names": "dflash",
    "TargetModel": "target", "TargetStep": "target", "tree_attention_mask": "target",
    "batch_attention_mask": "target", "compact_rows_": "target", "check_transformers_version": "target",
    "SUPPORTED_TRANSFORMERS": "target",
    "TinySpec": "tiny", "write_tiny_models": "tiny", "build_tiny_target": "tiny",
    "build_tiny_drafter": "tiny", "SPECIAL_TOKENS": "tiny", "FAMILY_STYLE": "tiny",
    "ChatStyle": "tiny_tokenizer", "STYLES": "tiny_tokenizer", "chat_style": "tiny_tokenizer",
    "build_tokenizer": "tiny_tokenizer", "stop_token_ids": "tiny_tokenizer",
    "QWEN3_TEMPLATE": "tiny_tokenizer", "LLAMA3_TEMPLATE": "tiny_tokenizer",
    "GEMMA_TEMPLATE": "tiny_tokenizer",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
