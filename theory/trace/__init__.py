"""Tree traces: the on-disk format (the bridge from the engine to theory), streaming exact laws in bounded memory, per-round summaries and the trace-reading benchmark.

Public names load their module on first access.
``exitlaw.theory.trace`` was one module before it became this package: its public names are still
reachable here (they live in ``exitlaw.theory.trace.format``).
"""

from exitlaw.theory.module_faces import lazy_exports

_EXPORTS = {
    "run_trace_bench": "bench",
    "make_bench_trace": "bench",
    "peak_rss_mb": "bench",
    "TraceFormatError": "format",
    "IncompleteTraceError": "format",
    "TraceRound": "format",
    "Trace": "format",
    "exact_record": "format",
    "parse_round": "format",
    "json_safe": "format",
    "Span": "format",
    "iter_records": "format",
    "split_spans": "format",
    "iter_trace": "format",
    "read_trace": "format",
    "partial_path": "format",
    "TraceWriter": "format",
    "write_trace": "format",
    "ChunkLaw": "stream",
    "DEFAULT_CHUNK_NODES": "stream",
    "bucket_size": "stream",
    "edge_law_batch": "stream",
    "laws_of_rounds": "stream",
    "stream_trace_laws": "stream",
    "summarize_trace": "summary",
    "summarize_trace_file": "summary",
    "format_summary": "summary",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, former_module="format")
__all__ = list(_EXPORTS)
