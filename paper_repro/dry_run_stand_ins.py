"""Stand-ins for what a full-scale run downloads: tiny models per family, local datasets, and the rewrite
of a full-scale command line onto them (:mod:`.full_scale_dry_run` executes the result).

``write_local_datasets(dir)`` writes one JSONL file per source, rows shaped as the
Hub rows are (field names as released), so the dry run reads them through the same
reader and wording as the real sets (:mod:`exitlaw.engine.prompts.records`):

* ``gsm8k``: ``{"question", "answer"}``; ``math500``: ``{"problem", "solution", "answer",
  "subject", "level", "unique_id"}``; ``humaneval``: ``{"task_id", "prompt",
  "canonical_solution", "test", "entry_point"}``; ``mt-bench``: the Hub's
  ``{"prompt": [turn, ...], "category", "prompt_id"}``;
* the training mixture (open-perfectblend): ShareGPT ``conversations`` rows (with a system
  message and several turns), and, mixed in so every shape the reader takes is read on
  the training path, an OpenAI ``messages`` row and an MT-Bench ``turns`` row.

The source each config names maps to ``NAME=FILE`` (named sets) or ``jsonl:FILE``.
:class:`StandIns` writes a tiny random-weight target of a family with its tokenizer
(:func:`exitlaw.engine.models.tiny.write_tiny_models`) and rewrites a command (:class:`Shrink`).
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr
from dataclasses import dataclass
from pathlib import Path


class DryRunError(ValueError):  # defined here, re-exported by .full_scale_dry_run
    """A full-scale command that failed, or whose output is wrong, in the dry run."""


ROWS: dict[str, list[dict]] = {
    "gsm8k": [
        {
            "question": "Tom has 3 apples and buys 4 more. How many apples does he have?",
            "answer": "3 + 4 = 7\n#### 7",
        },
        {
            "question": "A book costs 12 dollars. What do 3 books cost?",
            "answer": "3 * 12 = 36\n#### 36",
        },
    ],
    "math500": [
        {
            "problem": "What is $2^5$?",
            "solution": "$2^5 = 32$.",
            "answer": "32",
            "subject": "Algebra",
            "level": 1,
            "unique_id": "test/algebra/1.json",
        },
        {
            "problem": "Solve $x + 3 = 10$.",
            "solution": "$x = 7$.",
            "answer": "7",
            "subject": "Algebra",
            "level": 1,
            "unique_id": "test/algebra/2.json",
        },
    ],
    "humaneval": [
        {
            "task_id": "HumanEval/0",
            "prompt": 'def add(a, b):\n    """Return a + b."""\n',
            "canonical_solution": "    return a + b\n",
            "test": "def check(f):\n    assert f(1, 2) == 3\n",
            "entry_point": "add",
        },
        {
            "task_id": "HumanEval/1",
            "prompt": 'def square(x):\n    """Return x * x."""\n',
            "canonical_solution": "    return x * x\n",
            "test": "def check(f):\n    assert f(3) == 9\n",
            "entry_point": "square",
        },
    ],
    "mt-bench": [
        {
            "prompt": ["Write a short poem about trees.", "Now make it rhyme."],
            "category": "writing",
            "prompt_id": 81,
        },
        {"prompt": ["What is 12 + 30?", "And times two?"], "category": "math", "prompt_id": 111},
    ],
}

TRAIN_ROWS: list[dict] = [
    {
        "conversations": [
            {"from": "system", "value": "You are helpful."},
            {"from": "human", "value": "Explain tree speculative decoding in one line."},
            {"from": "gpt", "value": "Draft a tree, verify it with one target forward."},
            {"from": "human", "value": "And the exit law?"},
        ]
    },
    {
        "conversations": [
            {"from": "human", "value": "def add(a, b):"},
            {"from": "gpt", "value": "return a + b"},
        ]
    },
    {
        "messages": [
            {"role": "user", "content": "What is 12 + 30?"},
            {"role": "assistant", "content": "42"},
        ]
    },
    {"turns": ["Please reason step by step: 3 * 4?", "Now add one."]},
]

TRAIN_SOURCE = "hf:mlabonne/open-perfectblend:train"


def write_local_datasets(out: str | Path) -> dict[str, str]:
    """Write the files; returns ``{source as a config names it: source the dry run passes}``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sources = {}
    for name, rows in ROWS.items():
        path = out / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        sources[name] = f"{name}={path}"
    path = out / "open-perfectblend.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in TRAIN_ROWS), encoding="utf-8")
    sources[TRAIN_SOURCE] = f"jsonl:{path}"
    return sources


@dataclass(frozen=True)
class Shrink:
    """The sizes the dry run replaces (everything else is the config's)."""

    num_prompts: int = 1  # per benchmark set (MT-Bench: one two-turn conversation)
    max_new_tokens: int = 3  # per bench turn
    train_steps: int = 2
    train_batch: int = 2
    train_anchors: int = 2
    train_prompts: int = 4  # --num-prompts (the local mixture holds four records, one per shape)
    train_new_tokens: int = 8  # target continuation length
    context: int = 160  # gpu-check: must exceed the largest tree (B + 1 = 129)
    all_repeats: bool = False  # bench repeats with seeds 1.. differ from seed 0 only in the seed


def flag_values(argv: list[str]) -> dict[str, str]:
    """``{--flag: value}`` of a command line (flags without a value are left out)."""
    return {
        argv[i]: argv[i + 1]
        for i in range(len(argv) - 1)
        if argv[i].startswith("--") and not argv[i + 1].startswith("--")
    }


def _set(argv: list[str], flag: str, value: str) -> list[str]:
    out = list(argv)
    if flag in out:
        out[out.index(flag) + 1] = value
    else:
        out += [flag, value]
    return out


class StandIns:
    """Tiny models per family, local datasets, and the argv rewrite."""

    def __init__(self, workdir: Path, shrink: Shrink):
        self.workdir, self.shrink = workdir, shrink
        self.sources = write_local_datasets(workdir / "data")
        self.models: dict[str, tuple[Path, Path]] = {}

    def pair(self, family: str) -> tuple[Path, Path]:
        from exitlaw.engine.models.tiny import write_tiny_models  # lazy: torch; the face imports us

        if family not in self.models:
            with redirect_stderr(io.StringIO()):  # save_pretrained's progress bar
                self.models[family] = write_tiny_models(
                    self.workdir / "models" / family, family=family, seed=0
                )
        return self.models[family]

    def source(self, name: str) -> str:
        if name not in self.sources:
            raise DryRunError(
                f"no local stand-in for dataset {name!r}; add it to dry_run_stand_ins"
            )
        return self.sources[name]

    def rewrite(self, argv: list[str], cfg: dict, family: str) -> list[str]:
        """``argv`` (``exitlaw COMMAND ...`` of config ``cfg``) on the stand-ins of ``family``: the target, the
        released drafter, the datasets, device and dtype replaced, the :class:`Shrink` sizes set; every other
        flag (budgets, temperatures, verifiers, objective, lambda, lr, seed, output paths) kept."""
        s, v = self.shrink, flag_values(argv)
        cmd = command_of(argv)
        if cmd == "gpu-check":
            out = _set(
                _set(_set(argv, "--device", "cpu"), "--context", str(s.context)), "--repeats", "1"
            )
            return out + ["--tiny"]
        target, released = self.pair(family)
        out = _set(argv, "--target", str(target))
        if v["--draft"] == cfg["released_draft"]:
            out = _set(out, "--draft", str(released))
        out = _set(out, "--dtype", "float32")
        if cmd == "bench decoding":
            out = _set(out, "--prompts", self.source(v["--prompts"]))
            out = _set(out, "--device", "cpu")
            out = _set(out, "--num-prompts", str(min(int(v["--num-prompts"]), s.num_prompts)))
            out = _set(out, "--max-new-tokens", str(s.max_new_tokens))
            return out + ["--no-progress"]
        if cmd == "train":
            out = _set(out, "--prompts", self.source(v["--prompts"]))
            for flag, value in (
                ("--steps", s.train_steps),
                ("--batch-size", s.train_batch),
                ("--anchors", s.train_anchors),
                ("--max-new-tokens", s.train_new_tokens),
                ("--num-prompts", s.train_prompts),
                ("--device", "cpu"),
            ):
                out = _set(out, flag, str(value))
            return out + ["--no-progress"]
        raise DryRunError(f"the dry run does not know the command {cmd!r}")


def command_of(argv: list[str]) -> str:
    """The command of ``exitlaw ...`` argv: ``"train"``, ``"gpu-check"``, ``"bench decoding"``."""
    return " ".join(argv[1:3]) if argv[1] == "bench" else argv[1]


__all__ = [
    "command_of",
    "ROWS",
    "TRAIN_ROWS",
    "TRAIN_SOURCE",
    "write_local_datasets",
    "DryRunError",
    "Shrink",
    "StandIns",
    "flag_values",
]
