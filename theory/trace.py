"""The on-disk tree trace: the bridge from the engine (writer) to theory (reader).

Format (JSON lines, UTF-8). Line 1 is a header::

    {"schema": "exitlaw.tree-trace", "version": 1, "meta": {...}}

``meta`` is free-form (model names, budget, temperature, seed, config). Each
further line is one verification round::

    {"round": 0,
     "parent": [-1, 0, 0, 1],          # node 0 is the root
     "token": [17, 5, 9, 2],           # token[0]: last committed token
     "edge_prob": [1.0, 0.6, 0.1, 0.5],# a(u) = p_par(u)(x_u); entry 0 ignored
     "draft_logprob": [0.0, -0.3, ...],# optional: log q_depth(u)(x_u)
     "exit_node": 3, "bonus": 42,      # optional: what the verifier returned
     "target_rows": [[...], ...]}      # optional: full rows p_v (small V only)

Only ``parent``, ``token`` and ``edge_prob`` are required; they determine the
exit law exactly (DESIGN.md section 1). Numpy only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .distributions import check_edge_probs
from .tree import DraftTree

SCHEMA = "exitlaw.tree-trace"
VERSION = 1


class TraceFormatError(ValueError):
    """A trace file does not follow the schema above; the message names the line."""


@dataclass(frozen=True, eq=False)
class TraceRound:
    """One recorded round: the realised tree, its target edge probabilities and the verifier's output."""

    tree: DraftTree
    edge_prob: np.ndarray
    draft_logprob: np.ndarray | None = None
    exit_node: int | None = None
    bonus: int | None = None
    target_rows: np.ndarray | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def block_length(self) -> int | None:
        """Observed output-block length ``depth(exit) + 1``, if the exit was recorded."""
        if self.exit_node is None:
            return None
        return int(self.tree.depth[self.exit_node]) + 1

    def to_json(self, index: int) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "round": index,
            "parent": self.tree.parent.tolist(),
            "token": self.tree.token.tolist(),
            "edge_prob": np.asarray(self.edge_prob, dtype=np.float64).tolist(),
        }
        if self.draft_logprob is not None:
            rec["draft_logprob"] = np.asarray(self.draft_logprob, dtype=np.float64).tolist()
        if self.exit_node is not None:
            rec["exit_node"] = int(self.exit_node)
        if self.bonus is not None:
            rec["bonus"] = int(self.bonus)
        if self.target_rows is not None:
            rec["target_rows"] = np.asarray(self.target_rows, dtype=np.float64).tolist()
        rec.update(self.extra)
        return rec


@dataclass(frozen=True)
class Trace:
    meta: dict[str, Any]
    rounds: list[TraceRound]


_KNOWN = {"round", "parent", "token", "edge_prob", "draft_logprob", "exit_node", "bonus", "target_rows"}


def parse_round(rec: dict[str, Any], where: str) -> TraceRound:
    """Validate one round record; every error names ``where`` (file and line)."""
    for key in ("parent", "token", "edge_prob"):
        if key not in rec:
            raise TraceFormatError(f"{where}: missing required field {key!r}")
    try:
        tree = DraftTree(parent=rec["parent"], token=rec["token"])
        edge = check_edge_probs(tree, rec["edge_prob"])
    except ValueError as err:
        raise TraceFormatError(f"{where}: {err}") from err
    draft = rec.get("draft_logprob")
    if draft is not None:
        draft = np.asarray(draft, dtype=np.float64)
        if draft.shape != (tree.num_nodes,):
            raise TraceFormatError(f"{where}: draft_logprob has shape {draft.shape}, expected ({tree.num_nodes},)")
    exit_node = rec.get("exit_node")
    if exit_node is not None and not (isinstance(exit_node, int) and 0 <= exit_node < tree.num_nodes):
        raise TraceFormatError(f"{where}: exit_node {exit_node!r} is not a node of the tree")
    bonus = rec.get("bonus")
    if bonus is not None and not (isinstance(bonus, int) and bonus >= 0):
        raise TraceFormatError(f"{where}: bonus {bonus!r} is not a non-negative token id")
    rows = rec.get("target_rows")
    if rows is not None:
        rows = np.asarray(rows, dtype=np.float64)
        if rows.ndim != 2 or rows.shape[0] != tree.num_nodes:
            raise TraceFormatError(f"{where}: target_rows has shape {rows.shape}, expected ({tree.num_nodes}, V)")
    extra = {k: v for k, v in rec.items() if k not in _KNOWN}
    return TraceRound(tree, edge, draft, exit_node, bonus, rows, extra)


def iter_trace(path: str | Path) -> Iterator[TraceRound | dict[str, Any]]:
    """Yield the header's ``meta`` first, then each :class:`TraceRound`, validating as it reads."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"tree trace {str(path)!r} does not exist or is not a file")
    with path.open("r", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            where = f"{path}:{lineno}"
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise TraceFormatError(f"{where}: not valid JSON ({err.msg})") from None
            if not isinstance(rec, dict):
                raise TraceFormatError(f"{where}: expected a JSON object")
            if lineno == 1:
                if rec.get("schema") != SCHEMA:
                    raise TraceFormatError(f"{where}: header must have schema {SCHEMA!r}, got {rec.get('schema')!r}")
                if rec.get("version") != VERSION:
                    raise TraceFormatError(f"{where}: unsupported trace version {rec.get('version')!r} (this exitlaw reads {VERSION})")
                yield dict(rec.get("meta", {}))
                continue
            yield parse_round(rec, where)


def read_trace(path: str | Path) -> Trace:
    items = iter(iter_trace(path))
    try:
        meta = next(items)
    except StopIteration:
        raise TraceFormatError(f"{path}: empty file, expected a header line") from None
    rounds = list(items)
    return Trace(meta=meta, rounds=rounds)  # type: ignore[arg-type]


class TraceWriter:
    """Append rounds to a new trace file. Refuses to overwrite unless ``overwrite=True``."""

    def __init__(self, path: str | Path, meta: dict[str, Any] | None = None, *, overwrite: bool = False):
        self.path = Path(path)
        if self.path.exists() and not overwrite:
            raise FileExistsError(f"{self.path} exists; pass overwrite=True to replace it")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("w", encoding="utf-8")
        self._fh.write(json.dumps({"schema": SCHEMA, "version": VERSION, "meta": meta or {}}) + "\n")
        self._count = 0

    def write(self, rnd: TraceRound) -> None:
        self._fh.write(json.dumps(rnd.to_json(self._count)) + "\n")
        self._count += 1

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> "TraceWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def write_trace(path: str | Path, rounds, meta: dict[str, Any] | None = None, *, overwrite: bool = False) -> Path:
    with TraceWriter(path, meta, overwrite=overwrite) as w:
        for r in rounds:
            w.write(r)
    return Path(path)
