"""exitlaw.engine (see DESIGN.md section 2)."""

# --- tree builders, device trees and verifiers (issue 5, verifier side)
from .builders import build_chain, build_ddtree
from .device_tree import DeviceTree, to_device_tree
from .verifiers import KINDS as VERIFIER_KINDS, VerifierGenerators, VerifyResult, verify
from .verifier_bench import run_verifier_bench as run_verifier_stage_bench

# --- target, DFlash drafter, checkpoints, generate loop, bench (issue 5, model side)
from .checkpoint import load_drafter, load_pair, load_target, save_drafter
from .dflash import DFlashConfig, DFlashDrafter, DraftCache
from .generate import DecodeConfig, GenerationResult, Generators, generate, generate_ar
from .target import TargetModel, TargetStep, tree_attention_mask
from .timing import NullTimer, StageTimer
from .tiny import TinySpec, write_tiny_models

# --- ExitTrain: exit-guided drafter training (issue 6)
from .exittrain import OBJECTIVES, LossTerms, TreeBatch, TreeLaw, exittrain_loss, objective_weights, tree_law
from .exittrain_batch import SequenceBatch, make_batch, score_trees
from .train_data import Sequences, cached_sequences, generate_continuations, load_prompts
from .train_loop import TrainConfig, train
