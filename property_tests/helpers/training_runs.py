"""Small training runs the engine's training tests share."""

from __future__ import annotations


def resume_run(steps: int) -> dict:
    """The resume tests' run of ``steps`` steps: two sequences a step, three anchors each, a checkpoint
    every two steps (``TrainConfig`` fields)."""
    from exitlaw.engine.training.config import DrafterSchedule

    schedule = DrafterSchedule(steps=steps, batch=2, lr=1e-3, anchors=3)
    return dict(schedule=schedule, checkpoint_every=2, warmup_steps=1)


def tiny_run_spec(target, draft, prompts, root, config, **extra):
    """A whole ``run_training`` run into ``root/run`` (cache ``root/cache``): 8 new tokens per prompt,
    generated two prompts at a time, no progress bar."""
    from exitlaw.engine.training.run import TrainingRunSpec

    paths = dict(target=str(target), draft=str(draft), prompts=str(prompts), out=str(root / "run"))
    generation = dict(max_new_tokens=8, gen_batch=2, cache_dir=str(root / "cache"))
    return TrainingRunSpec(**paths, config=config, **generation, progress=False, **extra)
