"""Every range check of the trace reader probed at its edges: ``limit - 1``, ``limit`` and ``limit + 1``
(for real-valued limits, the neighbouring floats), through the fast (orjson) and the reference (json)
parser. The accepted side is stated, not inferred, so an off-by-one in either check fails here; a value
that only the fast parser would accept or refuse, or a different message, fails too.
"""

from __future__ import annotations

import math

import pytest

from exitlaw.theory import ROW_SUM_ATOL, TraceFormatError
from exitlaw.theory.trace import format as trace_module
from exitlaw.theory.trace.summary import summarize_trace_file
from helpers.trace_cases import HEAD, _end, _round, _write_lines

INT64_MAX = 2**63 - 1
UP, DOWN = math.inf, -math.inf


def _three(**fields) -> str:
    """A round on the tree root -> 1 -> 2 (three nodes), with ``fields`` replaced."""
    base = {"parent": [-1, 0, 1], "token": [0, 1, 2], "edge_prob": [1.0, 0.5, 0.5]}
    return _round(**{**base, **fields})


# (name, record line, accepted?): each check at both sides of each of its limits
EDGES = [
    # exit_node is a node: 0 <= exit_node < num_nodes (3)
    ("exit_node -1", _three(exit_node=-1), False),
    ("exit_node 0", _three(exit_node=0), True),
    ("exit_node n-1", _three(exit_node=2), True),
    ("exit_node n", _three(exit_node=3), False),
    ("exit_node n+1", _three(exit_node=4), False),
    # bonus is a non-negative int64 token id
    ("bonus -1", _three(bonus=-1), False),
    ("bonus 0", _three(bonus=0), True),
    ("bonus int64 max - 1", _three(bonus=INT64_MAX - 1), True),
    ("bonus int64 max", _three(bonus=INT64_MAX), True),
    ("bonus int64 max + 1", _three(bonus=INT64_MAX + 1), False),
    # a non-root parent precedes its child: 0 <= parent[i] < i (node 2: 0 and 1 allowed)
    ("parent[2] -1", _three(parent=[-1, 0, -1]), False),
    ("parent[2] 0", _three(parent=[-1, 0, 0]), True),
    ("parent[2] i-1", _three(parent=[-1, 0, 1]), True),
    ("parent[2] i", _three(parent=[-1, 0, 2]), False),
    ("parent[2] i+1", _three(parent=[-1, 0, 3]), False),
    # tokens are non-negative int64 ids
    ("token -1", _three(token=[0, 1, -1]), False),
    ("token 0", _three(token=[0, 1, 0]), True),
    ("token int64 max", _three(token=[0, 1, INT64_MAX]), True),
    ("token int64 max + 1", _three(token=[0, 1, INT64_MAX + 1]), False),
    # a draft log-probability is <= 0 (within the row-sum tolerance)
    ("draft_logprob 0", _three(draft_logprob=[0.0, 0.0, 0.0]), True),
    ("draft_logprob atol", _three(draft_logprob=[0.0, ROW_SUM_ATOL, 0.0]), True),
    (
        "draft_logprob above atol",
        _three(draft_logprob=[0.0, math.nextafter(ROW_SUM_ATOL, UP), 0.0]),
        False,
    ),
    # an edge probability lies in [0, 1]
    ("edge_prob 0", _three(edge_prob=[1.0, 0.5, 0.0]), True),
    ("edge_prob below 0", _three(edge_prob=[1.0, 0.5, -1e-3]), False),
    ("edge_prob 1", _three(edge_prob=[1.0, 0.5, 1.0]), True),
    ("edge_prob above 1", _three(edge_prob=[1.0, 0.5, 1.0 + 1e-3]), False),
]


def _read(tmp_path, line: str, fast: bool, monkeypatch) -> str | None:
    """``None`` when the trace is accepted, else the error message (file and line named)."""
    path = tmp_path / "edge.jsonl"
    _write_lines(path, [HEAD, line, _end()])
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(trace_module, "_fast_loads", None)
        try:
            summarize_trace_file(path)
        except TraceFormatError as err:
            return str(err)
    return None


@pytest.mark.parametrize("case", EDGES, ids=[c[0] for c in EDGES])
def test_each_range_check_holds_at_both_sides_of_its_limit_in_both_parsers(
    tmp_path, monkeypatch, case
):
    name, line, accepted = case
    fast = _read(tmp_path, line, True, monkeypatch)
    ref = _read(tmp_path, line, False, monkeypatch)
    assert fast == ref, f"{name}: the parsers disagree: {fast!r} vs {ref!r}"
    if accepted:
        assert ref is None, f"{name} refused: {ref}"
    else:
        assert ref is not None and ":2: " in ref, f"{name} accepted (or not named by line)"


def test_the_fast_parser_is_the_one_under_test():
    pytest.importorskip("orjson")
    assert trace_module._fast_loads is not None
