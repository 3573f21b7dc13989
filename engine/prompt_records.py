"""Prompt records: one reader for the JSONL files of ``exitlaw bench`` and ``exitlaw train``.

A record is a JSON object holding one of (first match wins):

* ``turns``: a list of user messages (MT-Bench style);
* ``conversations`` (ShareGPT: ``{"from": "human"|"gpt", "value": ...}``) or ``messages``
  (OpenAI: ``{"role": "user"|"assistant", "content": ...}``): the user turns are kept;
* ``prompt`` / ``text`` / ``question`` / ``instruction``: one string.

``prompt_ids`` (token ids) is read by :mod:`.train_data` only. Every error names the
file and line (or dataset row) and says what is wrong.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

TEXT_FIELDS = ("prompt", "text", "question", "instruction")
_USER = {"human", "user"}


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
                raise ValueError(f"{where}: not valid JSON ({err.msg})") from None
            if not isinstance(rec, dict):
                raise ValueError(f"{where}: expected a JSON object")
            yield where, rec


def _chat_user_turns(items, where: str, field: str) -> list[str]:
    if not isinstance(items, list):
        raise ValueError(f"{where}: '{field}' must be a list of messages")
    out = []
    for m in items:
        if not isinstance(m, dict):
            raise ValueError(f"{where}: every entry of '{field}' must be an object")
        who = m.get("from", m.get("role"))
        text = m.get("value", m.get("content"))
        if who in _USER:
            if not isinstance(text, str):
                raise ValueError(f"{where}: a user message in '{field}' has no text")
            out.append(text)
    return out


def user_turns(rec: dict[str, Any], where: str) -> list[str]:
    """The user turns of one record (see the module docstring); at least one."""
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: expected a JSON object")
    if "turns" in rec:
        turns = rec["turns"]
        if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
            raise ValueError(f"{where}: 'turns' must be a list of strings")
    elif "conversations" in rec:
        turns = _chat_user_turns(rec["conversations"], where, "conversations")
    elif "messages" in rec:
        turns = _chat_user_turns(rec["messages"], where, "messages")
    else:
        turns = [rec[k] for k in TEXT_FIELDS if isinstance(rec.get(k), str)][:1]
        if not turns:
            raise ValueError(f"{where}: no turns, conversations, messages or {'/'.join(TEXT_FIELDS)} field")
    if not turns:
        raise ValueError(f"{where}: the record holds no user turn")
    return list(turns)
