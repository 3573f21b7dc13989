"""Command lines for the tests that run the ``exitlaw`` CLI, written as keywords instead of flag lists."""

from __future__ import annotations

import json

PROMPTS = ("def add(a, b):", "x = 1")

# the smallest run the CLI tests train: two steps of one sequence, two anchors, short continuations
TINY_RUN = dict(steps=2, batch_size=1, anchors=2, max_new_tokens=10, gen_batch=2, no_progress=True)


def cli_argv(*words, **flags) -> list[str]:
    """``words`` (the command), then ``--name value`` for each keyword in order: underscores as
    dashes, ``True`` a bare flag, every value as ``str``."""
    argv = [str(w) for w in words]
    for name, value in flags.items():
        argv.append("--" + name.replace("_", "-"))
        if value is not True:
            argv.append(str(value))
    return argv


def pair_flags(tiny, prompts=None) -> dict:
    """``--target`` and ``--draft`` of the tiny pair, and ``--prompts jsonl:prompts`` when given."""
    flags = dict(target=tiny[0], draft=tiny[1])
    return flags if prompts is None else {**flags, "prompts": f"jsonl:{prompts}"}


def write_prompts(path, prompts=PROMPTS):
    """A JSONL prompts file at ``path``, one ``{"prompt": ...}`` a line; returns ``path``."""
    path.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts))
    return path


def train_argv(tdir, ddir, prompts, *extra, **flags) -> list[str]:
    """``train --target T --draft D --prompts P``, then ``flags`` (as :func:`cli_argv`), then ``extra``."""
    return [*cli_argv("train", target=tdir, draft=ddir, prompts=prompts, **flags), *extra]
