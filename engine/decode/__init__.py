"""Decoding: device trees, builders, sampling settings, verifiers, the generate loop, their batched twins, stage timing and bounds on work.

Public names load their module on first access.
``exitlaw.engine.decode`` was one module before it became this package: its public names are still
reachable here (they live in ``exitlaw.engine.decode.loop``).
"""

from exitlaw.theory.module_faces import lazy_exports

_EXPORTS = {
    "BatchDraftCache": "batch_draft", "dflash_draft_batch": "batch_draft", "build_trees_batch": "batch_draft",
    "BatchState": "batch_generate", "BatchGenerationResult": "batch_generate",
    "prefill_batch": "batch_generate", "draft_batch_stage": "batch_generate",
    "build_batch_stage": "batch_generate", "verify_forward_batch_stage": "batch_generate",
    "decide_batch_stage": "batch_generate", "commit_batch_stage": "batch_generate",
    "batch_round": "batch_generate", "trace_batch_round": "batch_generate",
    "generate_batch": "batch_generate", "generate_ar_batch": "batch_generate",
    "ar_step_batch": "batch_generate", "row_cache": "batch_generate",
    "BatchTree": "batch_tree", "to_batch_tree": "batch_tree",
    "verify_batch": "batch_verifiers", "batch_exit_law": "batch_verifiers",
    "verify_batch_greedy": "batch_verifiers", "verify_batch_predraw": "batch_verifiers",
    "verify_batch_tev": "batch_verifiers", "verify_batch_residual": "batch_verifiers",
    "build_ddtree": "builders", "build_chain": "builders",
    "DeviceTree": "device_tree", "to_device_tree": "device_tree",
    "DecodeConfig": "loop", "Generators": "loop", "DecodeState": "loop", "GenerationResult": "loop",
    "RoundRecord": "loop", "METHODS": "loop", "prefill_stage": "loop", "draft_stage": "loop",
    "build_stage": "loop", "verify_forward_stage": "loop", "decide_stage": "loop", "commit_stage": "loop",
    "speculative_round": "loop", "generate": "loop", "generate_ar": "loop", "sample_token": "loop",
    "trace_round": "loop",
    "filter_logits": "sampling_settings", "processed_probs": "sampling_settings",
    "processed_draft_logprobs": "sampling_settings", "rows_processor": "sampling_settings",
    "StageTimer": "timing", "NullTimer": "timing", "interleaved_ms": "timing", "median_ms": "timing",
    "KINDS": "verifiers", "VerifierGenerators": "verifiers", "VerifyResult": "verifiers",
    "verify": "verifiers", "verify_greedy": "verifiers", "verify_predraw": "verifiers",
    "verify_residual": "verifiers", "verify_tev": "verifiers",
    "RoundMemory": "work_bounds", "round_memory": "work_bounds", "available_bytes": "work_bounds",
    "check_decode_fits": "work_bounds",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, former_module="loop")
__all__ = list(_EXPORTS)
