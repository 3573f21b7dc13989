"""Tree traces: the on-disk format (the bridge from the engine to theory), streaming exact laws in bounded memory, per-round summaries and the trace-reading benchmark."""

from .bench import make_bench_trace, peak_rss_mb, run_trace_bench
from .format import (
    exact_record,
    IncompleteTraceError,
    iter_records,
    iter_trace,
    json_safe,
    parse_round,
    partial_path,
    read_trace,
    Span,
    split_spans,
    Trace,
    TraceFormatError,
    TraceRound,
    TraceWriter,
    write_trace,
)
from .stream import (
    bucket_size,
    ChunkLaw,
    DEFAULT_CHUNK_NODES,
    edge_law_batch,
    laws_of_rounds,
    stream_trace_laws,
)
from .summary import format_summary, summarize_trace, summarize_trace_file

__all__ = [
    "run_trace_bench",
    "make_bench_trace",
    "peak_rss_mb",
    "TraceFormatError",
    "IncompleteTraceError",
    "TraceRound",
    "Trace",
    "exact_record",
    "parse_round",
    "json_safe",
    "Span",
    "iter_records",
    "split_spans",
    "iter_trace",
    "read_trace",
    "partial_path",
    "TraceWriter",
    "write_trace",
    "ChunkLaw",
    "DEFAULT_CHUNK_NODES",
    "bucket_size",
    "edge_law_batch",
    "laws_of_rounds",
    "stream_trace_laws",
    "summarize_trace",
    "summarize_trace_file",
    "format_summary",
]
