"""Small training runs the engine's training tests share."""

from __future__ import annotations

# the resume tests' run: two sequences a step, three anchors each, a checkpoint every two steps
RESUME_RUN = dict(batch_size=2, anchors_per_seq=3, lr=1e-3, checkpoint_every=2, warmup_steps=1)


def tiny_run_spec(target, draft, prompts, root, config, **extra):
    """A whole ``run_training`` run into ``root/run`` (cache ``root/cache``): 8 new tokens per prompt,
    generated two prompts at a time, no progress bar."""
    from exitlaw.engine.training.run import TrainingRunSpec

    paths = dict(target=str(target), draft=str(draft), prompts=str(prompts), out=str(root / "run"))
    generation = dict(max_new_tokens=8, gen_batch=2, cache_dir=str(root / "cache"))
    return TrainingRunSpec(**paths, config=config, **generation, progress=False, **extra)
