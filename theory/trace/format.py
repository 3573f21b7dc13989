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
exit law exactly (docs/design.md §1.2). The last line is the end marker::

    {"end": "exitlaw.tree-trace", "rounds": 2}

A file without it was not finished (the writer was interrupted): readers refuse
it unless asked to read an incomplete trace. The writer builds the file under a
temporary name (``.NAME.partial``) and renames it only once the end marker is
written, so a trace under its own name is always complete, and ``overwrite``
replaces the old file only then. Blank lines, a header that is not line 1,
bools where numbers are expected and non-UTF-8 bytes are refused with the
file and line. Numpy only.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from exitlaw.theory.distributions import ROW_SUM_ATOL, as_real_array, check_edge_probs
from exitlaw.theory.tree import DraftTree

SCHEMA = "exitlaw.tree-trace"
VERSION = 1


class TraceFormatError(ValueError):
    """A trace file does not follow the schema above; the message names the line."""


class IncompleteTraceError(TraceFormatError):
    """A trace without its end marker: its writer did not finish."""


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


_KNOWN = {
    "round",
    "parent",
    "token",
    "edge_prob",
    "draft_logprob",
    "exit_node",
    "bonus",
    "target_rows",
}


_INT64_MAX = np.iinfo(np.int64).max
END_KEY = "end"
# one JSON value per line, parsed by the json module's own scanner (``json.loads`` minus its wrappers)
_scan = json.scanner.make_scanner(json.JSONDecoder())
_skip_ws = json.decoder.WHITESPACE.match
try:  # optional, ~4x faster: used for plain round records only (see iter_records' ``fast``)
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - exercised by forcing _fast_loads = None in the tests
    _fast_loads = None


def _json_line(raw: bytes) -> Any:
    """One line parsed by the json module (the reference parser: exact integers of any size)."""
    line = raw.decode("utf-8")  # decoded first: json.loads(bytes) would guess UTF-16
    rec, end = _scan(line, _skip_ws(line, 0).end())
    if _skip_ws(line, end).end() != len(line):
        raise json.JSONDecodeError("Extra data", line, end)
    return rec


def exact_record(raw: bytes) -> Any:
    """A line already read with ``fast=True``, parsed again by the json module."""
    return _json_line(raw)


def _fast_round(raw: bytes, rounds: int) -> dict | None:
    """``raw`` parsed by orjson when it is a round record with the expected index, else None."""
    try:
        rec = _fast_loads(raw)
    except ValueError:
        # NaN, Infinity, lone surrogates, deep nesting, bad JSON: the json module decides
        return None
    if type(rec) is not dict or END_KEY in rec:
        return None
    index = rec.get("round", rounds)
    return rec if type(index) is int and index == rounds else None


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _real_vector(values, name: str, where: str, ndim: int = 1) -> np.ndarray:
    try:
        arr = np.asarray(values)
    except ValueError as err:
        raise TraceFormatError(
            f"{where}: {name} is not a rectangular array of numbers ({err})"
        ) from None
    if arr.size and arr.dtype.kind not in "iuf":
        try:
            # names the first entry that is not a real number (object arrays)
            as_real_array(arr, name)
        except ValueError as err:
            raise TraceFormatError(f"{where}: {err}") from None
        raise TraceFormatError(f"{where}: {name} must hold numbers, got dtype {arr.dtype}")
    if arr.ndim != ndim and arr.size:
        raise TraceFormatError(f"{where}: {name} must be {ndim}-D, got shape {arr.shape}")
    return arr.astype(np.float64)


def parse_round(rec: dict[str, Any], where: str, *, atol: float = ROW_SUM_ATOL) -> TraceRound:
    """Validate one round record; every error names ``where`` (file and line)."""
    for key in ("parent", "token", "edge_prob"):
        if key not in rec:
            raise TraceFormatError(f"{where}: missing required field {key!r}")
    try:
        tree = DraftTree(parent=rec["parent"], token=rec["token"])
        edge = check_edge_probs(tree, rec["edge_prob"], atol=atol)
    except ValueError as err:
        raise TraceFormatError(f"{where}: {err}") from err
    draft = rec.get("draft_logprob")
    if draft is not None:
        draft = _real_vector(draft, "draft_logprob", where)
        if draft.shape != (tree.num_nodes,):
            raise TraceFormatError(
                f"{where}: draft_logprob has shape {draft.shape}, expected ({tree.num_nodes},)"
            )
        above = np.flatnonzero(~(draft <= atol))  # NaN and positive values: not a log-probability
        if above.size:
            i = int(above[0])
            raise TraceFormatError(
                f"{where}: draft_logprob[{i}] = {float(draft[i])!r} is not a log-probability (must be <= 0)"
            )
    exit_node = rec.get("exit_node")
    if exit_node is not None and not (_is_int(exit_node) and 0 <= exit_node < tree.num_nodes):
        raise TraceFormatError(f"{where}: exit_node {exit_node!r} is not a node of the tree")
    bonus = rec.get("bonus")
    if bonus is not None and not (_is_int(bonus) and 0 <= bonus <= _INT64_MAX):
        raise TraceFormatError(f"{where}: bonus {bonus!r} is not a non-negative token id")
    rows = rec.get("target_rows")
    if rows is not None:
        rows = _real_vector(rows, "target_rows", where, ndim=2)
        if rows.ndim != 2 or rows.shape[0] != tree.num_nodes:
            raise TraceFormatError(
                f"{where}: target_rows has shape {rows.shape}, expected ({tree.num_nodes}, V)"
            )
    extra = {k: v for k, v in rec.items() if k not in _KNOWN}
    return TraceRound(tree, edge, draft, exit_node, bonus, rows, extra)


def json_safe(value: Any, where: str = "meta") -> Any:
    """``value`` with numpy scalars and arrays turned into JSON numbers and lists; anything else that
    JSON cannot hold (sets, objects, NaN keys) is a :class:`TraceFormatError` naming its key."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TraceFormatError(f"{where}: key {k!r} is not a string")
            out[k] = json_safe(v, f"{where}.{k}")
        return out
    if isinstance(value, (list, tuple)):
        return [json_safe(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist(), where)
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise TraceFormatError(
        f"{where}: {type(value).__name__} value {value!r} cannot be written as JSON"
    )


@dataclass(frozen=True)
class Span:
    """A byte range of a trace file that starts at a line boundary: ``[start, end)``, its first line
    number, and whether it holds the header (``first``) and the end of the file (``last``)."""

    start: int
    end: int
    first_lineno: int
    first: bool
    last: bool


def _span_lines(fh, span: Span | None):
    if span is None:
        yield from fh
        return
    fh.seek(span.start)
    while fh.tell() < span.end:
        raw = fh.readline()
        if not raw:
            return
        yield raw


# what _parse_line returns for a last line cut off mid-write (no newline): the trace is incomplete
_CUT_OFF = object()


def _parse_line(path: Path, lineno: int, raw: bytes, rounds: int, last: bool):
    """One line of a trace parsed by the json module: a JSON object, or :data:`_CUT_OFF` for the
    file's last line when a writer was killed mid-line. Anything else is a :class:`TraceFormatError`
    naming the line: not UTF-8, not JSON, nested too deeply, not an object."""
    try:
        rec = _json_line(raw)
    except (UnicodeDecodeError, StopIteration, json.JSONDecodeError) as err:
        if last and lineno > 1 and not raw.endswith(b"\n"):  # a writer killed mid-line
            return _CUT_OFF
        if isinstance(err, UnicodeDecodeError):
            raise TraceFormatError(
                f"{path}:{lineno}: not UTF-8 text (byte {err.start}: "
                f"{raw[err.start : err.start + 1]!r})"
            ) from None
        if isinstance(err, StopIteration):  # the C scanner's "no value here"
            raise TraceFormatError(
                f"{path}:{lineno}: not valid JSON (Expecting value at {err.value})"
            ) from None
        raise TraceFormatError(f"{path}:{lineno}: not valid JSON ({err.msg})") from None
    except RecursionError:
        raise TraceFormatError(f"{path}:{lineno}: JSON nested too deeply") from None
    if type(rec) is not dict:
        raise TraceFormatError(f"{path}:{lineno}: expected a JSON object, got {type(rec).__name__}")
    return rec


def _header_meta(path: Path, rec: dict) -> dict:
    """The ``meta`` of the header line ``rec``, after checking its schema and version."""
    where = f"{path}:1"
    if rec.get("schema") != SCHEMA:
        raise TraceFormatError(
            f"{where}: header must have schema {SCHEMA!r}, got {rec.get('schema')!r}"
        )
    if rec.get("version") != VERSION or isinstance(rec.get("version"), bool):
        raise TraceFormatError(
            f"{where}: unsupported trace version {rec.get('version')!r} (this exitlaw reads {VERSION})"
        )
    meta = rec.get("meta", {})
    if not isinstance(meta, dict):
        raise TraceFormatError(
            f"{where}: header meta must be a JSON object, got {type(meta).__name__}"
        )
    return dict(meta)


def iter_records(
    path: str | Path,
    *,
    allow_incomplete: bool = False,
    with_line: bool = False,
    span: Span | None = None,
    fast: bool = False,
) -> Iterator[tuple]:
    """Yield ``(where, record)`` (``(where, record, raw_line)`` with ``with_line``): the header's
    ``meta`` first (``where`` = ``"meta"``), then each round record as parsed JSON. Checks the
    framing: header on line 1, no blank lines, UTF-8, round indices in order, the end marker last
    with the right round count (unless ``allow_incomplete``). ``span``: read only that part of the
    file (a parallel reader's share; rounds before it are counted from its first line number).
    ``fast``: parse round records with orjson when it is installed. It reads integers outside
    [-2**63, 2**64) as floats, so a caller that finds anything unusual in a record must re-read its
    raw line with :func:`exact_record`; every other line (header, end marker, anything orjson refuses,
    a record that fails the framing checks) is parsed by the json module as without ``fast``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"tree trace {str(path)!r} does not exist or is not a file")
    first = span is None or span.first
    last = span is None or span.last
    use_fast = fast and _fast_loads is not None
    lineno0 = 1 if span is None else span.first_lineno
    rounds = 0 if first else lineno0 - 2  # every line between the header and this span is a round
    ended = None
    lineno = lineno0 - 1
    with path.open("rb") as fh:
        for lineno, raw in enumerate(_span_lines(fh, span), start=lineno0):
            if ended is not None:
                raise TraceFormatError(
                    f"{path}:{lineno}: content after the end marker on line {ended}"
                )
            if raw.isspace() or not raw:
                what = "expected the header" if lineno == 1 else "a trace has no blank lines"
                raise TraceFormatError(f"{path}:{lineno}: blank line ({what})")
            fast_rec = _fast_round(raw, rounds) if use_fast and lineno > 1 else None
            rec = fast_rec if fast_rec is not None else _parse_line(path, lineno, raw, rounds, last)
            if rec is _CUT_OFF:
                if allow_incomplete:
                    break
                raise IncompleteTraceError(
                    f"{path}:{lineno}: incomplete trace: the last line is cut off "
                    f"(no newline, no end marker; {rounds} whole rounds before it; "
                    "the writer was interrupted)"
                )
            if lineno == 1:
                meta = _header_meta(path, rec)
                yield ("meta", meta, raw) if with_line else ("meta", meta)
                continue
            if END_KEY in rec:
                if (
                    rec.get(END_KEY) != SCHEMA
                    or rec.get("rounds") != rounds
                    or isinstance(rec.get("rounds"), bool)
                ):
                    raise TraceFormatError(
                        f"{path}:{lineno}: end marker {rec!r} does not close this trace of "
                        f"{rounds} rounds"
                    )
                ended = lineno
                continue
            index = rec.get("round", rounds)
            if index != rounds or type(index) is not int:
                raise TraceFormatError(
                    f"{path}:{lineno}: round index {index!r}, expected {rounds} "
                    "(rounds out of order?)"
                )
            rounds += 1
            where = f"{path}:{lineno}"
            yield (where, rec, raw) if with_line else (where, rec)
    if first and lineno == 0:
        raise TraceFormatError(f"{path}: empty file, expected a header line")
    if ended is not None and not last:
        raise TraceFormatError(f"{path}:{ended + 1}: content after the end marker on line {ended}")
    if last and ended is None and not allow_incomplete:
        raise IncompleteTraceError(
            f"{path}: incomplete trace: no end marker after line {lineno} "
            f"({rounds} rounds read; the writer was interrupted)"
        )


def split_spans(path: str | Path, parts: int) -> list[Span]:
    """Cut a trace file into ``parts`` spans at line boundaries (fewer when lines are long)."""
    path = Path(path)
    size = path.stat().st_size
    cuts = [0]
    with path.open("rb") as fh:
        for k in range(1, parts):
            fh.seek(max(size * k // parts, cuts[-1]))
            if fh.tell() > 0:
                fh.seek(fh.tell() - 1)
                fh.readline()  # to the start of the next line
            if fh.tell() > cuts[-1] and fh.tell() < size:
                cuts.append(fh.tell())
        cuts.append(size)
        spans, lineno = [], 1
        for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
            spans.append(Span(a, b, lineno, i == 0, i == len(cuts) - 2))
            fh.seek(a)
            left, count = b - a, 0
            while left > 0:
                block = fh.read(min(left, 1 << 24))
                count += block.count(b"\n")
                left -= len(block)
            lineno += count
    return spans


def iter_trace(
    path: str | Path, *, allow_incomplete: bool = False
) -> Iterator[TraceRound | dict[str, Any]]:
    """Yield the header's ``meta`` first, then each :class:`TraceRound`, validating as it reads."""
    for where, rec in iter_records(path, allow_incomplete=allow_incomplete):
        yield rec if where == "meta" else parse_round(rec, where)


def read_trace(path: str | Path, *, allow_incomplete: bool = False) -> Trace:
    items = iter(iter_trace(path, allow_incomplete=allow_incomplete))
    meta = next(items)
    rounds = list(items)
    return Trace(meta=meta, rounds=rounds)  # type: ignore[arg-type]


def partial_path(path: Path) -> Path:
    """Where a trace is built before it is complete: ``.NAME.partial`` beside it."""
    return path.with_name(f".{path.name}.partial")


class TraceWriter:
    """Write a trace: rounds go to ``.NAME.partial``; :meth:`close` adds the end marker and renames it
    to ``NAME``. Refuses an existing ``NAME`` unless ``overwrite=True`` (then the old file stays intact
    until the new one is complete). A writer left by an exception removes its partial file."""

    def __init__(
        self, path: str | Path, meta: dict[str, Any] | None = None, *, overwrite: bool = False
    ):
        self.path = Path(path)
        if self.path.exists() and not overwrite:
            raise FileExistsError(f"{self.path} exists; pass overwrite=True to replace it")
        if self.path.is_dir():
            raise FileExistsError(f"{self.path} is a directory, not a trace file")
        if meta is not None and not isinstance(meta, dict):
            raise TraceFormatError(f"meta must be a dict, got {type(meta).__name__}")
        try:  # the header is built before anything is opened: a bad meta writes nothing
            header = json.dumps(
                {"schema": SCHEMA, "version": VERSION, "meta": json_safe(meta or {})},
                allow_nan=False,
            )
        except TraceFormatError:
            raise
        except ValueError:
            raise TraceFormatError(
                f"meta holds NaN or inf, which JSON cannot hold: {meta!r}"
            ) from None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = partial_path(self.path)
        self._fh = self._tmp.open("w", encoding="utf-8")
        self._fh.write(header + "\n")
        self._count = 0
        self._closed = False

    def write(self, rnd: TraceRound) -> None:
        self._fh.write(
            json.dumps(json_safe(rnd.to_json(self._count), f"round {self._count}")) + "\n"
        )
        self._count += 1

    def close(self) -> None:
        """Write the end marker, flush to disk and rename to the final name (atomic).

        Called while an exception propagates (from a ``finally`` block of an interrupted loop,
        Ctrl-C included), it discards the unfinished trace instead, as leaving a ``with`` block
        by an exception does: an interrupted run never looks complete.
        """
        if sys.exc_info()[0] is not None:
            self.abort()
            return
        if self._closed:
            return
        self._closed = True
        self._fh.write(json.dumps({END_KEY: SCHEMA, "rounds": self._count}) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        os.replace(self._tmp, self.path)

    def abort(self) -> None:
        """Discard the unfinished trace (the final name is left as it was)."""
        if self._closed:
            return
        self._closed = True
        self._fh.close()
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> "TraceWriter":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_trace(
    path: str | Path, rounds, meta: dict[str, Any] | None = None, *, overwrite: bool = False
) -> Path:
    with TraceWriter(path, meta, overwrite=overwrite) as w:
        for r in rounds:
            w.write(r)
    return Path(path)
