"""Reading one JSON file with an error that names it and says what is wrong (standard library only).

Missing file: ``FileNotFoundError``; not UTF-8, not JSON, or (``object_only``) not a JSON object: the
caller's ``error`` type (``ValueError`` by default), each naming the file. Nothing is repaired or guessed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_json_file(
    path: str | Path, what: str, *, error: type[Exception] = ValueError, object_only: bool = True
) -> Any:
    """The parsed contents of ``path`` (``what`` names the file in errors, e.g. ``"figure data"``)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise error(f"{path}: not UTF-8 text (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise error(f"{path}: not valid JSON ({err.msg}, line {err.lineno})") from None
    if object_only and not isinstance(data, dict):
        raise error(f"{path}: {what} must be a JSON object, got {type(data).__name__}")
    return data


__all__ = ["read_json_file"]
