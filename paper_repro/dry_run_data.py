"""Local stand-ins for the datasets the full-scale configs name, in their real record shapes.

``write_local_datasets(dir)`` writes one JSONL file per source, rows shaped as the
Hub rows are (field names as released), so the dry run reads them through the same
reader and wording as the real sets (:mod:`exitlaw.engine.prompt_records`):

* ``gsm8k``: ``{"question", "answer"}``; ``math500``: ``{"problem", "solution", "answer",
  "subject", "level", "unique_id"}``; ``humaneval``: ``{"task_id", "prompt",
  "canonical_solution", "test", "entry_point"}``; ``mt-bench``: the Hub's
  ``{"prompt": [turn, ...], "category", "prompt_id"}``;
* the training mixture (open-perfectblend): ShareGPT ``conversations`` rows (with a system
  message and several turns), and, mixed in so every shape the reader takes is read on
  the training path, an OpenAI ``messages`` row and an MT-Bench ``turns`` row.

The source each config names maps to ``NAME=FILE`` (named sets) or ``jsonl:FILE``.
"""

from __future__ import annotations

import json
from pathlib import Path

ROWS: dict[str, list[dict]] = {
    "gsm8k": [
        {"question": "Tom has 3 apples and buys 4 more. How many apples does he have?",
         "answer": "3 + 4 = 7\n#### 7"},
        {"question": "A book costs 12 dollars. What do 3 books cost?", "answer": "3 * 12 = 36\n#### 36"},
    ],
    "math500": [
        {"problem": "What is $2^5$?", "solution": "$2^5 = 32$.", "answer": "32", "subject": "Algebra", "level": 1,
         "unique_id": "test/algebra/1.json"},
        {"problem": "Solve $x + 3 = 10$.", "solution": "$x = 7$.", "answer": "7", "subject": "Algebra", "level": 1,
         "unique_id": "test/algebra/2.json"},
    ],
    "humaneval": [
        {"task_id": "HumanEval/0", "prompt": "def add(a, b):\n    \"\"\"Return a + b.\"\"\"\n",
         "canonical_solution": "    return a + b\n", "test": "def check(f):\n    assert f(1, 2) == 3\n",
         "entry_point": "add"},
        {"task_id": "HumanEval/1", "prompt": "def square(x):\n    \"\"\"Return x * x.\"\"\"\n",
         "canonical_solution": "    return x * x\n", "test": "def check(f):\n    assert f(3) == 9\n",
         "entry_point": "square"},
    ],
    "mt-bench": [
        {"prompt": ["Write a short poem about trees.", "Now make it rhyme."], "category": "writing",
         "prompt_id": 81},
        {"prompt": ["What is 12 + 30?", "And times two?"], "category": "math", "prompt_id": 111},
    ],
}

TRAIN_ROWS: list[dict] = [
    {"conversations": [{"from": "system", "value": "You are helpful."},
                       {"from": "human", "value": "Explain tree speculative decoding in one line."},
                       {"from": "gpt", "value": "Draft a tree, verify it with one target forward."},
                       {"from": "human", "value": "And the exit law?"}]},
    {"conversations": [{"from": "human", "value": "def add(a, b):"}, {"from": "gpt", "value": "return a + b"}]},
    {"messages": [{"role": "user", "content": "What is 12 + 30?"}, {"role": "assistant", "content": "42"}]},
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


__all__ = ["ROWS", "TRAIN_ROWS", "TRAIN_SOURCE", "write_local_datasets"]
