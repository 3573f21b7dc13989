"""The evaluation cells a run appends, one JSON line per finished cell (``cells*.jsonl``), read back.

No torch: the ExitTrain studies' reports and the ledger read the cells of a finished run.
"""

from __future__ import annotations

import json
from pathlib import Path

from exitlaw.theory.infra.atomic_io import atomic_write_text


def read_cells(path: Path) -> dict:
    """The finished evaluation cells appended to ``path`` (``key -> result``).

    Each cell is one line written whole by one append; a last line without its newline is an append
    cut off by an interrupted run: it is dropped (the file is rewritten without it) and the cell is
    evaluated again. Any other unreadable line is an error naming the file and line.
    """
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines[-1]:
        print(
            f"{path}: dropping a cut-off last line (an interrupted append); that cell is evaluated again"
        )
        lines[-1] = ""
        atomic_write_text(path, "\n".join(lines))
    done = {}
    for i, line in enumerate(lines[:-1], 1):
        try:
            rec = json.loads(line)
            done[rec["key"]] = rec["result"]
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise ValueError(
                f"{path} line {i} is not an evaluation cell ({err}); the file is corrupt: "
                "move it aside to evaluate every cell again"
            ) from None
    return done
