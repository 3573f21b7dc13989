"""exitlaw.engine: real tree speculative decoding in PyTorch (docs/architecture.md §1).

Never imports JAX. Public names load their module (and torch) on first access,
so ``exitlaw --help`` and the JAX-only commands do not pay for importing torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

if TYPE_CHECKING:
    from .bench.compare import (
        compare_files as compare_bench_files,
        compare_results,
        format_comparison,
    )
    from .bench.verifiers import run_verifier_bench as run_verifier_stage_bench
    from .builders.batched import build_trees_batch
    from .decode.batch_draft import BatchDraftCache, dflash_draft_batch
    from .decode.batch_generate import (
        BatchGenerationResult,
        BatchState,
        batch_round,
        generate_ar_batch,
        generate_batch,
        prefill_batch,
        row_cache,
    )
    from .decode.batch_tree import BatchTree, to_batch_tree
    from .decode.batch_verifiers import batch_exit_law, verify_batch
    from .builders.single import build_chain, build_ddtree
    from .decode.device_tree import DeviceTree, to_device_tree
    from .decode.loop import DecodeConfig, GenerationResult, Generators, generate, generate_ar
    from .decode.timing import NullTimer, StageTimer
    from .decode.verifiers import KINDS as VERIFIER_KINDS, VerifierGenerators, VerifyResult, verify
    from .models.attention_window import layer_windows
    from .models.checkpoint import load_drafter, load_pair, load_target, save_drafter
    from .models.config import LMSizes, causal_lm_config, qwen3_config
    from .models.dflash import DFlashConfig, DFlashDrafter, DraftCache
    from .models.target import TargetModel, TargetStep, batch_attention_mask, tree_attention_mask
    from .models.tiny import TinySpec, write_tiny_models
    from .models.tiny_tokenizer import build_tokenizer
    from .prompts.encoding import PromptEncodingError, encode_prompt, encode_prompts
    from .prompts.records import Prompt, PromptRecordError, load_prompt_set
    from .training.batch import SequenceBatch, make_batch, score_trees
    from .training.config import PRESETS as TRAIN_PRESETS, TrainConfig, cosine_factor, preset_config
    from .training.data import Sequences, cached_sequences, generate_continuations, load_prompts
    from .training.draft_opd import OPDChains, draft_opd_term, sample_chains
    from .training.exittrain import LossTerms, exittrain_loss
    from .training.law import TreeBatch, TreeLaw, objective_weights, raw_weights, tree_law
    from .training.loop import StepMetrics, train
    from .training.objectives import NORMALISATIONS, OBJECTIVES, ObjectiveError, check_objective
    from .training.run import TrainingRunSpec, run_training
    from .training.vat import first_rejection, vat_position_weights, vat_term

# PEP 562: every name loads its module (and torch) on first access (static tools read the block above)
_LAZY = {
    # tree builders, device trees and verifiers
    "build_chain": ("builders.single", "build_chain"),
    "build_ddtree": ("builders.single", "build_ddtree"),
    "DeviceTree": ("decode.device_tree", "DeviceTree"),
    "to_device_tree": ("decode.device_tree", "to_device_tree"),
    "VERIFIER_KINDS": ("decode.verifiers", "KINDS"),
    "VerifierGenerators": ("decode.verifiers", "VerifierGenerators"),
    "VerifyResult": ("decode.verifiers", "VerifyResult"),
    "verify": ("decode.verifiers", "verify"),
    "run_verifier_stage_bench": ("bench.verifiers", "run_verifier_bench"),
    # batched tree decoding
    "BatchTree": ("decode.batch_tree", "BatchTree"),
    "to_batch_tree": ("decode.batch_tree", "to_batch_tree"),
    "verify_batch": ("decode.batch_verifiers", "verify_batch"),
    "batch_exit_law": ("decode.batch_verifiers", "batch_exit_law"),
    "BatchDraftCache": ("decode.batch_draft", "BatchDraftCache"),
    "dflash_draft_batch": ("decode.batch_draft", "dflash_draft_batch"),
    "build_trees_batch": ("builders.batched", "build_trees_batch"),
    "BatchState": ("decode.batch_generate", "BatchState"),
    "BatchGenerationResult": ("decode.batch_generate", "BatchGenerationResult"),
    "prefill_batch": ("decode.batch_generate", "prefill_batch"),
    "batch_round": ("decode.batch_generate", "batch_round"),
    "generate_batch": ("decode.batch_generate", "generate_batch"),
    "generate_ar_batch": ("decode.batch_generate", "generate_ar_batch"),
    "row_cache": ("decode.batch_generate", "row_cache"),
    "batch_attention_mask": ("models.target", "batch_attention_mask"),
    # target, DFlash drafter, checkpoints, generate loop, bench
    "load_drafter": ("models.checkpoint", "load_drafter"),
    "load_pair": ("models.checkpoint", "load_pair"),
    "load_target": ("models.checkpoint", "load_target"),
    "save_drafter": ("models.checkpoint", "save_drafter"),
    "DFlashConfig": ("models.dflash", "DFlashConfig"),
    "DFlashDrafter": ("models.dflash", "DFlashDrafter"),
    "DraftCache": ("models.dflash", "DraftCache"),
    "DecodeConfig": ("decode.loop", "DecodeConfig"),
    "GenerationResult": ("decode.loop", "GenerationResult"),
    "Generators": ("decode.loop", "Generators"),
    "generate": ("decode.loop", "generate"),
    "generate_ar": ("decode.loop", "generate_ar"),
    "TargetModel": ("models.target", "TargetModel"),
    "TargetStep": ("models.target", "TargetStep"),
    "tree_attention_mask": ("models.target", "tree_attention_mask"),
    "layer_windows": ("models.attention_window", "layer_windows"),
    "NullTimer": ("decode.timing", "NullTimer"),
    "StageTimer": ("decode.timing", "StageTimer"),
    "TinySpec": ("models.tiny", "TinySpec"),
    "write_tiny_models": ("models.tiny", "write_tiny_models"),
    "build_tokenizer": ("models.tiny_tokenizer", "build_tokenizer"),
    "LMSizes": ("models.config", "LMSizes"),
    "qwen3_config": ("models.config", "qwen3_config"),
    "causal_lm_config": ("models.config", "causal_lm_config"),
    # prompts: one reader, one encoder (bench and train); bench outputs compared
    "Prompt": ("prompts.records", "Prompt"),
    "PromptRecordError": ("prompts.records", "PromptRecordError"),
    "load_prompt_set": ("prompts.records", "load_prompt_set"),
    "PromptEncodingError": ("prompts.encoding", "PromptEncodingError"),
    "encode_prompt": ("prompts.encoding", "encode_prompt"),
    "encode_prompts": ("prompts.encoding", "encode_prompts"),
    "compare_results": ("bench.compare", "compare_results"),
    "compare_bench_files": ("bench.compare", "compare_files"),
    "format_comparison": ("bench.compare", "format_comparison"),
    # ExitTrain: exit-guided drafter training
    "OBJECTIVES": ("training.objectives", "OBJECTIVES"),
    "NORMALISATIONS": ("training.objectives", "NORMALISATIONS"),
    "ObjectiveError": ("training.objectives", "ObjectiveError"),
    "check_objective": ("training.objectives", "check_objective"),
    "LossTerms": ("training.exittrain", "LossTerms"),
    "TreeBatch": ("training.law", "TreeBatch"),
    "TreeLaw": ("training.law", "TreeLaw"),
    "exittrain_loss": ("training.exittrain", "exittrain_loss"),
    "objective_weights": ("training.law", "objective_weights"),
    "tree_law": ("training.law", "tree_law"),
    "raw_weights": ("training.law", "raw_weights"),
    "OPDChains": ("training.draft_opd", "OPDChains"),
    "sample_chains": ("training.draft_opd", "sample_chains"),
    "draft_opd_term": ("training.draft_opd", "draft_opd_term"),
    "vat_term": ("training.vat", "vat_term"),
    "vat_position_weights": ("training.vat", "vat_position_weights"),
    "first_rejection": ("training.vat", "first_rejection"),
    "SequenceBatch": ("training.batch", "SequenceBatch"),
    "make_batch": ("training.batch", "make_batch"),
    "score_trees": ("training.batch", "score_trees"),
    "Sequences": ("training.data", "Sequences"),
    "cached_sequences": ("training.data", "cached_sequences"),
    "generate_continuations": ("training.data", "generate_continuations"),
    "load_prompts": ("training.data", "load_prompts"),
    "TrainConfig": ("training.config", "TrainConfig"),
    "TRAIN_PRESETS": ("training.config", "PRESETS"),
    "preset_config": ("training.config", "preset_config"),
    "cosine_factor": ("training.config", "cosine_factor"),
    "StepMetrics": ("training.loop", "StepMetrics"),
    "train": ("training.loop", "train"),
    "TrainingRunSpec": ("training.run", "TrainingRunSpec"),
    "run_training": ("training.run", "run_training"),
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "build_chain",
    "build_ddtree",
    "DeviceTree",
    "to_device_tree",
    "VERIFIER_KINDS",
    "VerifierGenerators",
    "VerifyResult",
    "verify",
    "run_verifier_stage_bench",
    "BatchTree",
    "to_batch_tree",
    "verify_batch",
    "batch_exit_law",
    "BatchDraftCache",
    "dflash_draft_batch",
    "build_trees_batch",
    "BatchState",
    "BatchGenerationResult",
    "prefill_batch",
    "batch_round",
    "generate_batch",
    "generate_ar_batch",
    "row_cache",
    "batch_attention_mask",
    "load_drafter",
    "load_pair",
    "load_target",
    "save_drafter",
    "DFlashConfig",
    "DFlashDrafter",
    "DraftCache",
    "DecodeConfig",
    "GenerationResult",
    "Generators",
    "generate",
    "generate_ar",
    "TargetModel",
    "TargetStep",
    "tree_attention_mask",
    "layer_windows",
    "NullTimer",
    "StageTimer",
    "TinySpec",
    "write_tiny_models",
    "build_tokenizer",
    "LMSizes",
    "qwen3_config",
    "causal_lm_config",
    "Prompt",
    "PromptRecordError",
    "load_prompt_set",
    "PromptEncodingError",
    "encode_prompt",
    "encode_prompts",
    "compare_results",
    "compare_bench_files",
    "format_comparison",
    "OBJECTIVES",
    "NORMALISATIONS",
    "ObjectiveError",
    "check_objective",
    "LossTerms",
    "TreeBatch",
    "TreeLaw",
    "exittrain_loss",
    "objective_weights",
    "tree_law",
    "raw_weights",
    "OPDChains",
    "sample_chains",
    "draft_opd_term",
    "vat_term",
    "vat_position_weights",
    "first_rejection",
    "SequenceBatch",
    "make_batch",
    "score_trees",
    "Sequences",
    "cached_sequences",
    "generate_continuations",
    "load_prompts",
    "TrainConfig",
    "TRAIN_PRESETS",
    "preset_config",
    "cosine_factor",
    "StepMetrics",
    "train",
    "TrainingRunSpec",
    "run_training",
]
