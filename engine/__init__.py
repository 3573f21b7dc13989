"""exitlaw.engine: real tree speculative decoding in PyTorch (docs/architecture.md §1).

Never imports JAX. Public names load their module (and torch) on first access,
so ``exitlaw --help`` and the JAX-only commands do not pay for importing torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

if TYPE_CHECKING:
    from .bench.compare import compare_files as compare_bench_files
    from .bench.compare import compare_results, format_comparison
    from .bench.verifiers import run_verifier_bench as run_verifier_stage_bench
    from .builders.batched import build_trees_batch
    from .builders.single import build_chain, build_ddtree
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
    from .decode.device_tree import DeviceTree, to_device_tree
    from .decode.dispatch import verify, verify_batch
    from .decode.loop import DecodeConfig, GenerationResult, Generators, generate, generate_ar
    from .decode.timing import NullTimer, StageTimer
    from .decode.verifiers import KINDS as VERIFIER_KINDS
    from .decode.verifiers import VerifierGenerators, VerifyResult, batch_exit_law
    from .models.attention_window import layer_windows
    from .models.checkpoint import load_drafter, load_pair, load_target, save_drafter
    from .models.config import LMSizes, StackSizes, causal_lm_config, qwen3_config
    from .models.dflash import DFlashConfig, DFlashDrafter, DraftCache
    from .models.target import TargetModel, TargetStep, batch_attention_mask, tree_attention_mask
    from .models.tiny import TinySpec, write_tiny_models
    from .models.tiny_tokenizer import build_tokenizer
    from .prompts.encoding import PromptEncodingError, encode_prompt, encode_prompts
    from .prompts.records import Prompt, PromptRecordError, load_prompt_set
    from .training.batch import SequenceBatch, make_batch, score_trees
    from .training.config import PRESETS as TRAIN_PRESETS
    from .training.config import (
        DrafterSchedule,
        Schedule,
        TrainConfig,
        cosine_factor,
        preset_config,
    )
    from .training.data import Sequences, cached_sequences, generate_continuations, load_prompts
    from .training.draft_opd import OPDChains, draft_opd_term, sample_chains
    from .training.exittrain import LossTerms, exittrain_loss
    from .training.law import TreeBatch, TreeLaw, objective_weights, raw_weights, tree_law
    from .training.loop import StepMetrics, train
    from .training.objectives import NORMALISATIONS, OBJECTIVES, ObjectiveError, check_objective
    from .training.run import TrainingRunSpec, run_training
    from .training.vat import first_rejection, vat_position_weights, vat_term


# PEP 562: every name loads its module (and torch) on first access (static tools read the block above)
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "bench.compare": "compare_files as compare_bench_files, compare_results, format_comparison",
        "bench.verifiers": "run_verifier_bench as run_verifier_stage_bench",
        "builders.batched": "build_trees_batch",
        "decode.batch_draft": "BatchDraftCache, dflash_draft_batch",
        "decode.batch_generate": "BatchGenerationResult, BatchState, batch_round, generate_ar_batch, generate_batch, prefill_batch, row_cache",
        "decode.batch_tree": "BatchTree, to_batch_tree",
        "decode.dispatch": "verify, verify_batch",
        "builders.single": "build_chain, build_ddtree",
        "decode.device_tree": "DeviceTree, to_device_tree",
        "decode.loop": "DecodeConfig, GenerationResult, Generators, generate, generate_ar",
        "decode.timing": "NullTimer, StageTimer",
        "decode.verifiers": "KINDS as VERIFIER_KINDS, VerifierGenerators, VerifyResult, batch_exit_law",
        "models.attention_window": "layer_windows",
        "models.checkpoint": "load_drafter, load_pair, load_target, save_drafter",
        "models.config": "LMSizes, StackSizes, causal_lm_config, qwen3_config",
        "models.dflash": "DFlashConfig, DFlashDrafter, DraftCache",
        "models.target": "TargetModel, TargetStep, batch_attention_mask, tree_attention_mask",
        "models.tiny": "TinySpec, write_tiny_models",
        "models.tiny_tokenizer": "build_tokenizer",
        "prompts.encoding": "PromptEncodingError, encode_prompt, encode_prompts",
        "prompts.records": "Prompt, PromptRecordError, load_prompt_set",
        "training.batch": "SequenceBatch, make_batch, score_trees",
        "training.config": "PRESETS as TRAIN_PRESETS, DrafterSchedule, Schedule, TrainConfig, cosine_factor, preset_config",
        "training.data": "Sequences, cached_sequences, generate_continuations, load_prompts",
        "training.draft_opd": "OPDChains, draft_opd_term, sample_chains",
        "training.exittrain": "LossTerms, exittrain_loss",
        "training.law": "TreeBatch, TreeLaw, objective_weights, raw_weights, tree_law",
        "training.loop": "StepMetrics, train",
        "training.objectives": "NORMALISATIONS, OBJECTIVES, ObjectiveError, check_objective",
        "training.run": "TrainingRunSpec, run_training",
        "training.vat": "first_rejection, vat_position_weights, vat_term",
    },
)


__all__ = [
    "BatchDraftCache",
    "BatchGenerationResult",
    "BatchState",
    "BatchTree",
    "DFlashConfig",
    "DFlashDrafter",
    "DecodeConfig",
    "DeviceTree",
    "DraftCache",
    "DrafterSchedule",
    "GenerationResult",
    "Generators",
    "LMSizes",
    "LossTerms",
    "NORMALISATIONS",
    "NullTimer",
    "OBJECTIVES",
    "OPDChains",
    "ObjectiveError",
    "Prompt",
    "PromptEncodingError",
    "PromptRecordError",
    "Schedule",
    "SequenceBatch",
    "Sequences",
    "StackSizes",
    "StageTimer",
    "StepMetrics",
    "TRAIN_PRESETS",
    "TargetModel",
    "TargetStep",
    "TinySpec",
    "TrainConfig",
    "TrainingRunSpec",
    "TreeBatch",
    "TreeLaw",
    "VERIFIER_KINDS",
    "VerifierGenerators",
    "VerifyResult",
    "batch_attention_mask",
    "batch_exit_law",
    "batch_round",
    "build_chain",
    "build_ddtree",
    "build_tokenizer",
    "build_trees_batch",
    "cached_sequences",
    "causal_lm_config",
    "check_objective",
    "compare_bench_files",
    "compare_results",
    "cosine_factor",
    "dflash_draft_batch",
    "draft_opd_term",
    "encode_prompt",
    "encode_prompts",
    "exittrain_loss",
    "first_rejection",
    "format_comparison",
    "generate",
    "generate_ar",
    "generate_ar_batch",
    "generate_batch",
    "generate_continuations",
    "layer_windows",
    "load_drafter",
    "load_pair",
    "load_prompt_set",
    "load_prompts",
    "load_target",
    "make_batch",
    "objective_weights",
    "prefill_batch",
    "preset_config",
    "qwen3_config",
    "raw_weights",
    "row_cache",
    "run_training",
    "run_verifier_stage_bench",
    "sample_chains",
    "save_drafter",
    "score_trees",
    "to_batch_tree",
    "to_device_tree",
    "train",
    "tree_attention_mask",
    "tree_law",
    "vat_position_weights",
    "vat_term",
    "verify",
    "verify_batch",
    "write_tiny_models",
]
