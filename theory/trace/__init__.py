"""Tree traces: the on-disk format (the bridge from the engine to theory), streaming exact laws in bounded memory, per-round summaries and the trace-reading benchmark."""

from . import bench, stream
from .bench import *
from .format import (
    IncompleteTraceError,
    Span,
    Trace,
    TraceFormatError,
    TraceRound,
    TraceWriter,
    exact_record,
    iter_records,
    iter_trace,
    json_safe,
    parse_round,
    partial_path,
    read_trace,
    split_spans,
    write_trace,
)
from .stream import *
from .summary import format_summary, summarize_trace, summarize_trace_file

__all__ = [
    *bench.__all__,
    *stream.__all__,
    "IncompleteTraceError",
    "Span",
    "Trace",
    "TraceFormatError",
    "TraceRound",
    "TraceWriter",
    "exact_record",
    "format_summary",
    "iter_records",
    "iter_trace",
    "json_safe",
    "parse_round",
    "partial_path",
    "read_trace",
    "split_spans",
    "summarize_trace",
    "summarize_trace_file",
    "write_trace",
]
