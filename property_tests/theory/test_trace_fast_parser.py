"""The streaming trace reader's fast parser (orjson) changes speed only: same laws, same errors.

orjson reads integers outside [-2**63, 2**64) as floats; every record that leaves the fast path is
parsed again by the json module, so a huge value is refused with the value as written.
"""

import json

import numpy as np
import pytest

from exitlaw.cli import main
from exitlaw.theory import TraceFormatError
from exitlaw.theory.trace import format as trace_module
from exitlaw.theory.trace.bench import make_bench_trace
from exitlaw.theory.trace.summary import summarize_trace_file
from helpers.trace_cases import HEAD, TRACE_CASES, _end, _round, _write_lines


@pytest.fixture(params=["orjson", "json"])
def parser(request, monkeypatch):
    if request.param == "json":
        monkeypatch.setattr(trace_module, "_fast_loads", None)
    return request.param


def test_orjson_is_the_fast_parser_when_installed():
    orjson = pytest.importorskip("orjson")  # the theory extra installs it; CI has it
    assert trace_module._fast_loads is orjson.loads


def _summary_with(monkeypatch, path, fast: bool, **kw):
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(trace_module, "_fast_loads", None)
        return summarize_trace_file(path, **kw)


def test_fast_and_reference_parsers_give_identical_summaries(tmp_path, monkeypatch):
    path = make_bench_trace(tmp_path / "t.jsonl", rounds=300, max_budget=30, big_round=200)
    lines = path.read_text().splitlines()
    # unusual but valid records: null exit, target rows, the largest int64 bonus,
    # an exponent-written edge, a key written with an escape
    rec = json.loads(lines[5])
    rec["exit_node"] = None
    lines[5] = json.dumps(rec)
    rec = json.loads(lines[6])
    rec["bonus"] = 2**63 - 1
    rec["edge_prob"][-1] = 0.0
    lines[6] = json.dumps(rec).replace('"edge_prob": [1.0', '"edge_prob": [1e0')
    lines[7] = json.dumps(
        {
            "round": 6,
            "parent": [-1, 0],
            "token": [3, 4],
            "edge_prob": [1.0, 0.25],
            "target_rows": [[0.5, 0.5], [1.0, 0.0]],
        }
    )
    lines[8] = lines[8].replace('"round"', '"\\u0072ound"')
    path.write_text("\n".join(lines) + "\n")
    for workers in (1, 2):
        fast = _summary_with(monkeypatch, path, True, workers=workers, parallel_min_bytes=0)
        ref = _summary_with(monkeypatch, path, False, workers=workers, parallel_min_bytes=0)
        assert fast["rounds"] == ref["rounds"] and fast["totals"] == ref["totals"]
        assert fast["exit_depth_histogram"]["observed"] == ref["exit_depth_histogram"]["observed"]
        np.testing.assert_array_equal(
            fast["exit_depth_histogram"]["expected"], ref["exit_depth_histogram"]["expected"]
        )


HUGE = 2**64 + 1
HUGE_CASES = [
    ("token huge", _round(token=[0, HUGE])),
    ("token below int64", _round(token=[0, -(2**63) - 1])),
    ("parent huge", _round(parent=[-1, HUGE])),
    ("edge huge int", _round(edge_prob=[1, HUGE])),
    ("exit_node huge", _round(exit_node=HUGE)),
    ("bonus huge", _round(bonus=HUGE)),
    ("round huge", _round(round=HUGE)),
    ("draft_logprob huge", _round(draft_logprob=[0.0, HUGE])),
    ("edge 1e400", '{"round": 0, "parent": [-1, 0], "token": [0, 1], "edge_prob": [1, 1e400]}'),
]


def _law_error(tmp_path, capsys, lines) -> str:
    path = tmp_path / "bad.jsonl"
    _write_lines(path, lines)
    assert main(["law", str(path)]) == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("case", HUGE_CASES, ids=[c[0] for c in HUGE_CASES])
def test_huge_values_are_refused_as_written_by_both_parsers(tmp_path, capsys, monkeypatch, case):
    _, line = case
    lines = [HEAD, line, _end()]
    fast = _law_error(tmp_path, capsys, lines)
    monkeypatch.setattr(trace_module, "_fast_loads", None)
    ref = _law_error(tmp_path, capsys, lines)
    assert fast == ref
    if "1e400" not in line:
        assert str(HUGE) in fast or str(-(2**63) - 1) in fast or "int64" in fast, fast


@pytest.mark.parametrize("case", TRACE_CASES, ids=[c[0] for c in TRACE_CASES])
def test_every_malformed_trace_gets_the_same_error_from_both_parsers(
    tmp_path, capsys, monkeypatch, case
):
    _, lines, message = case
    fast = _law_error(tmp_path, capsys, lines)
    monkeypatch.setattr(trace_module, "_fast_loads", None)
    assert _law_error(tmp_path, capsys, lines) == fast


def test_an_error_in_the_span_read_by_the_main_process_is_named(tmp_path, parser):
    path = make_bench_trace(tmp_path / "t.jsonl", rounds=200, max_budget=10)
    text = path.read_text().splitlines()
    bad = json.loads(text[20])
    bad["parent"][1] = 5
    text[20] = json.dumps(bad)
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(TraceFormatError, match=f"{path}:21: "):
        summarize_trace_file(path, workers=2, parallel_min_bytes=0)
