"""Prompt records: the one reader of prompt sources for ``exitlaw bench decoding`` and ``exitlaw train``.

Sources (:func:`load_prompt_set`):

* ``gsm8k`` | ``humaneval`` | ``math500`` | ``mt-bench``: the paper's benchmark sets, read
  from the Hub through ``datasets`` and worded as DFlash's public benchmark words them
  (:data:`DATASETS`); ``NAME=FILE.jsonl`` reads the same set's rows from a local JSONL
  copy (same fields, same wording; no network);
* ``jsonl:FILE`` or ``FILE.jsonl``: one JSON object per line, any record shape below;
* ``hf:NAME[:SPLIT]``: any Hub dataset (split ``train`` by default), rows read as records.

Record shapes (first match wins):

* ``prompt_ids``: token ids (a prompt that is already tokenised; one turn);
* ``turns``: a list of user messages (MT-Bench, FastChat ``question.jsonl``);
* ``conversations`` (ShareGPT: ``{"from": "human"|"gpt", "value": ...}``, e.g.
  open-perfectblend) or ``messages`` (OpenAI: ``{"role": "user"|"assistant",
  "content": ...}``): the user turns are kept;
* ``prompt`` / ``text`` / ``question`` / ``problem`` / ``instruction``: one string
  (HumanEval, GSM8K, MATH-500 and instruction sets); a ``prompt`` that is a list of
  strings is a multi-turn record (the Hub's MT-Bench rows).

Every error is a :class:`PromptRecordError` (a ``ValueError``) naming the file and line
(or dataset row) and saying what is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

TEXT_FIELDS = ("prompt", "text", "question", "problem", "instruction")
_USER = {"human", "user"}

_STEP = "\nPlease reason step by step, and put your final answer within \\boxed{{}}."
DATASETS: dict[str, tuple[tuple, dict, str, str]] = {
    # name: (load_dataset args, kwargs, field, format of the first turn)
    "gsm8k": (("openai/gsm8k", "main"), {"split": "test"}, "question", "{}" + _STEP),
    "math500": (("HuggingFaceH4/MATH-500",), {"split": "test"}, "problem", "{}" + _STEP),
    "humaneval": (
        ("openai/openai_humaneval",),
        {"split": "test"},
        "prompt",
        "Write a solution to the following problem and make sure that it passes the tests:\n```python\n{}\n```",
    ),
    "mt-bench": (("HuggingFaceH4/mt_bench_prompts",), {"split": "train"}, "prompt", "{}"),
}


class PromptRecordError(ValueError):
    """A prompt source or record that cannot be read (the message names where and why)."""


@dataclass(frozen=True)
class Prompt:
    """One prompt: its user ``turns`` (text), or ``ids`` for a pre-tokenised one-turn prompt.

    ``where`` says where it came from (``FILE:LINE`` or ``NAME[row]``).
    """

    turns: tuple[str, ...] = ()
    ids: tuple[int, ...] | None = None
    where: str = ""

    def __post_init__(self):
        if (self.ids is None) == (not self.turns):
            raise PromptRecordError(
                f"{self.where}: a prompt holds user turns or token ids (exactly one of them)"
            )

    def to_json(self) -> dict[str, list]:
        """``{"turns": [...]}`` or ``{"ids": [...]}`` (what bench results store to identify a prompt)."""
        return {"ids": list(self.ids)} if self.ids is not None else {"turns": list(self.turns)}


def iter_jsonl_objects(path: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, record)`` for every non-blank line; ``where`` is ``FILE:LINE``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"prompt file {str(path)!r} does not exist")
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise PromptRecordError(f"{where}: not valid JSON ({err.msg})") from None
            if not isinstance(rec, dict):
                raise PromptRecordError(f"{where}: expected a JSON object")
            yield where, rec


def _chat_user_turns(items, where: str, field: str) -> list[str]:
    if not isinstance(items, list):
        raise PromptRecordError(f"{where}: '{field}' must be a list of messages")
    out = []
    for m in items:
        if not isinstance(m, dict):
            raise PromptRecordError(f"{where}: every entry of '{field}' must be an object")
        who = m.get("from", m.get("role"))
        text = m.get("value", m.get("content"))
        if who in _USER:
            if not isinstance(text, str):
                raise PromptRecordError(f"{where}: a user message in '{field}' has no text")
            out.append(text)
    return out


def _string_list(value, where: str, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise PromptRecordError(f"{where}: '{field}' must be a list of strings")
    return list(value)


def user_turns(rec: dict[str, Any], where: str) -> list[str]:
    """The user turns of one text record (see the module docstring); at least one."""
    if not isinstance(rec, dict):
        raise PromptRecordError(f"{where}: expected a JSON object")
    if "turns" in rec:
        turns = _string_list(rec["turns"], where, "turns")
    elif "conversations" in rec:
        turns = _chat_user_turns(rec["conversations"], where, "conversations")
    elif "messages" in rec:
        turns = _chat_user_turns(rec["messages"], where, "messages")
    elif isinstance(rec.get("prompt"), list):
        turns = _string_list(rec["prompt"], where, "prompt")
    else:
        turns = [rec[k] for k in TEXT_FIELDS if isinstance(rec.get(k), str)][:1]
        if not turns:
            raise PromptRecordError(
                f"{where}: no prompt_ids, turns, conversations, messages or "
                f"{'/'.join(TEXT_FIELDS)} field"
            )
    if not turns:
        raise PromptRecordError(f"{where}: the record holds no user turn")
    return turns


def read_record(rec: dict[str, Any], where: str) -> Prompt:
    """One record as a :class:`Prompt`: ``prompt_ids`` as given, else its user turns."""
    if isinstance(rec, dict) and "prompt_ids" in rec:
        ids = rec["prompt_ids"]
        if (
            not isinstance(ids, list)
            or not ids
            or not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in ids)
        ):
            raise PromptRecordError(
                f"{where}: prompt_ids must be a non-empty list of token ids (ints >= 0)"
            )
        return Prompt(ids=tuple(ids), where=where)
    return Prompt(turns=tuple(user_turns(rec, where)), where=where)


def named_set_prompt(name: str, row: dict[str, Any], where: str) -> Prompt:
    """A row of a named benchmark set: its field, the set's wording applied to the first turn."""
    _, _, field, fmt = DATASETS[name]
    if not isinstance(row, dict) or field not in row:
        raise PromptRecordError(f"{where}: a {name} row needs the field {field!r}")
    value = row[field]
    turns = [value] if isinstance(value, str) else _string_list(value, where, field)
    if not turns:
        raise PromptRecordError(f"{where}: the {field!r} field holds no turn")
    return Prompt(turns=(fmt.format(turns[0]), *turns[1:]), where=where)


def _hub_rows(args: tuple, kwargs: dict, what: str) -> Iterable[dict]:
    try:
        from datasets import (  # lazy: the optional `data` extra (the Hub sets); local JSONL needs nothing
            load_dataset,
        )
    except ImportError:
        raise PromptRecordError(
            f"{what} needs the `datasets` package (pip install datasets); "
            "or use a local copy (jsonl:FILE, NAME=FILE.jsonl)"
        ) from None
    try:
        return load_dataset(*args, **kwargs)
    except (
        Exception
    ) as err:  # offline / hub errors come in many types; name the set and the way out
        raise PromptRecordError(
            f"could not load {what} ({type(err).__name__}: {err}); "
            "offline? use a local copy (jsonl:FILE, NAME=FILE.jsonl)"
        ) from err


def _read(source: str) -> Iterator[Prompt]:
    name, eq, local = source.partition("=")
    if name in DATASETS:
        if eq:
            rows: Iterable[tuple[str, dict]] = iter_jsonl_objects(local)
        else:
            args, kwargs, _, _ = DATASETS[name]
            rows = (
                (f"{name}[{i}]", dict(r))
                for i, r in enumerate(_hub_rows(args, kwargs, f"dataset {name!r}"))
            )
        return (named_set_prompt(name, rec, where) for where, rec in rows)
    if source.startswith("hf:"):
        hub, _, split = source[3:].partition(":")
        rows = _hub_rows((hub,), {"split": split or "train"}, f"hf:{hub}")
        return (read_record(dict(r), f"{hub}[{i}]") for i, r in enumerate(rows))
    if source.startswith("jsonl:") or source.endswith(".jsonl"):
        path = source[len("jsonl:") :] if source.startswith("jsonl:") else source
        return (read_record(rec, where) for where, rec in iter_jsonl_objects(path))
    raise PromptRecordError(
        f"unknown prompt source {source!r}: it must be {' | '.join(DATASETS)} "
        "(or NAME=FILE.jsonl), jsonl:FILE, FILE.jsonl or hf:NAME[:SPLIT]"
    )


def load_prompt_set(source: str, *, limit: int | None = None) -> list[Prompt]:
    """The prompts of ``source`` (module docstring), at most ``limit``; at least one."""
    if limit is not None and limit < 1:
        raise PromptRecordError(f"limit must be >= 1, got {limit}")
    out: list[Prompt] = []
    for prompt in _read(source):
        out.append(prompt)
        if limit is not None and len(out) >= limit:
            break
    if not out:
        raise PromptRecordError(f"prompt source {source!r} holds no prompts")
    return out


def check_prompt_ids(prompts: Sequence[Prompt], vocab_size: int, model: str) -> None:
    """Refuse pre-tokenised prompts holding an id outside ``[0, vocab_size)`` (naming the record and the id)."""
    for p in prompts:
        bad = [t for t in p.ids or () if not 0 <= t < vocab_size]
        if bad:
            raise PromptRecordError(
                f"{p.where}: prompt_ids holds token id {bad[0]}, outside the vocabulary of "
                f"{model} (size {vocab_size}: ids 0..{vocab_size - 1})"
            )


__all__ = [
    "DATASETS",
    "check_prompt_ids",
    "TEXT_FIELDS",
    "Prompt",
    "PromptRecordError",
    "iter_jsonl_objects",
    "user_turns",
    "read_record",
    "named_set_prompt",
    "load_prompt_set",
]
