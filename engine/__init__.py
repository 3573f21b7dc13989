"""exitlaw.engine: real tree speculative decoding in PyTorch (DESIGN.md section 2).

Never imports JAX. Public names load their module (and torch) on first access,
so ``exitlaw --help`` and the JAX-only commands do not pay for importing torch.
"""

from __future__ import annotations

from importlib import import_module

_EXPORTS = {
    # tree builders, device trees and verifiers
    "build_chain": ("builders", "build_chain"),
    "build_ddtree": ("builders", "build_ddtree"),
    "DeviceTree": ("device_tree", "DeviceTree"),
    "to_device_tree": ("device_tree", "to_device_tree"),
    "VERIFIER_KINDS": ("verifiers", "KINDS"),
    "VerifierGenerators": ("verifiers", "VerifierGenerators"),
    "VerifyResult": ("verifiers", "VerifyResult"),
    "verify": ("verifiers", "verify"),
    "run_verifier_stage_bench": ("verifier_bench", "run_verifier_bench"),
    # batched tree decoding
    "BatchTree": ("batch_tree", "BatchTree"),
    "to_batch_tree": ("batch_tree", "to_batch_tree"),
    "verify_batch": ("batch_verifiers", "verify_batch"),
    "batch_exit_law": ("batch_verifiers", "batch_exit_law"),
    "BatchDraftCache": ("batch_draft", "BatchDraftCache"),
    "dflash_draft_batch": ("batch_draft", "dflash_draft_batch"),
    "build_trees_batch": ("batch_draft", "build_trees_batch"),
    "BatchState": ("batch_decode", "BatchState"),
    "BatchGenerationResult": ("batch_decode", "BatchGenerationResult"),
    "prefill_batch": ("batch_decode", "prefill_batch"),
    "batch_round": ("batch_decode", "batch_round"),
    "generate_batch": ("batch_decode", "generate_batch"),
    "generate_ar_batch": ("batch_decode", "generate_ar_batch"),
    "row_cache": ("batch_decode", "row_cache"),
    "batch_attention_mask": ("target", "batch_attention_mask"),
    # target, DFlash drafter, checkpoints, generate loop, bench
    "load_drafter": ("checkpoint", "load_drafter"),
    "load_pair": ("checkpoint", "load_pair"),
    "load_target": ("checkpoint", "load_target"),
    "save_drafter": ("checkpoint", "save_drafter"),
    "DFlashConfig": ("dflash", "DFlashConfig"),
    "DFlashDrafter": ("dflash", "DFlashDrafter"),
    "DraftCache": ("dflash", "DraftCache"),
    "DecodeConfig": ("decode", "DecodeConfig"),
    "GenerationResult": ("decode", "GenerationResult"),
    "Generators": ("decode", "Generators"),
    "generate": ("decode", "generate"),
    "generate_ar": ("decode", "generate_ar"),
    "TargetModel": ("target", "TargetModel"),
    "TargetStep": ("target", "TargetStep"),
    "tree_attention_mask": ("target", "tree_attention_mask"),
    "layer_windows": ("attention_window", "layer_windows"),
    "NullTimer": ("timing", "NullTimer"),
    "StageTimer": ("timing", "StageTimer"),
    "TinySpec": ("tiny", "TinySpec"),
    "write_tiny_models": ("tiny", "write_tiny_models"),
    "build_tokenizer": ("tiny_tokenizer", "build_tokenizer"),
    "LMSizes": ("model_config", "LMSizes"),
    "qwen3_config": ("model_config", "qwen3_config"),
    "causal_lm_config": ("model_config", "causal_lm_config"),
    # prompts: one reader, one encoder (bench and train); bench outputs compared
    "Prompt": ("prompt_records", "Prompt"),
    "PromptRecordError": ("prompt_records", "PromptRecordError"),
    "load_prompt_set": ("prompt_records", "load_prompt_set"),
    "PromptEncodingError": ("prompt_encoding", "PromptEncodingError"),
    "encode_prompt": ("prompt_encoding", "encode_prompt"),
    "encode_prompts": ("prompt_encoding", "encode_prompts"),
    "compare_results": ("bench_compare", "compare_results"),
    "compare_bench_files": ("bench_compare", "compare_files"),
    "format_comparison": ("bench_compare", "format_comparison"),
    # ExitTrain: exit-guided drafter training
    "OBJECTIVES": ("objectives", "OBJECTIVES"),
    "NORMALISATIONS": ("objectives", "NORMALISATIONS"),
    "ObjectiveError": ("objectives", "ObjectiveError"),
    "check_objective": ("objectives", "check_objective"),
    "LossTerms": ("exittrain", "LossTerms"),
    "TreeBatch": ("exittrain_law", "TreeBatch"),
    "TreeLaw": ("exittrain_law", "TreeLaw"),
    "exittrain_loss": ("exittrain", "exittrain_loss"),
    "objective_weights": ("exittrain_law", "objective_weights"),
    "tree_law": ("exittrain_law", "tree_law"),
    "raw_weights": ("exittrain_law", "raw_weights"),
    "OPDChains": ("draft_opd", "OPDChains"),
    "sample_chains": ("draft_opd", "sample_chains"),
    "draft_opd_term": ("draft_opd", "draft_opd_term"),
    "vat_term": ("vat", "vat_term"),
    "vat_position_weights": ("vat", "vat_position_weights"),
    "first_rejection": ("vat", "first_rejection"),
    "SequenceBatch": ("exittrain_batch", "SequenceBatch"),
    "make_batch": ("exittrain_batch", "make_batch"),
    "score_trees": ("exittrain_batch", "score_trees"),
    "Sequences": ("train_data", "Sequences"),
    "cached_sequences": ("train_data", "cached_sequences"),
    "generate_continuations": ("train_data", "generate_continuations"),
    "load_prompts": ("train_data", "load_prompts"),
    "TrainConfig": ("train_config", "TrainConfig"),
    "TRAIN_PRESETS": ("train_config", "PRESETS"),
    "preset_config": ("train_config", "preset_config"),
    "cosine_factor": ("train_config", "cosine_factor"),
    "StepMetrics": ("train_loop", "StepMetrics"),
    "train": ("train_loop", "train"),
    "TrainingRunSpec": ("training_run", "TrainingRunSpec"),
    "run_training": ("training_run", "run_training"),
}


def __getattr__(name: str):
    if name in _EXPORTS:
        module, attr = _EXPORTS[name]
        return getattr(import_module(f".{module}", __name__), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_EXPORTS))


__all__ = list(_EXPORTS)
