"""Malformed tree-trace files shared by the malformed-input tests and the fast-parser tests:
``(name, lines, message)``, each refused by ``read_trace`` and ``exitlaw law`` naming the file and line."""

import json

HEAD = '{"schema": "exitlaw.tree-trace", "version": 1, "meta": {}}'
R0 = '{"round": 0, "parent": [-1, 0], "token": [0, 1], "edge_prob": [1.0, 0.5]}'


def _round(**fields) -> str:
    rec = {"round": 0, "parent": [-1, 0], "token": [0, 1], "edge_prob": [1.0, 0.5]}
    rec.update(fields)
    return json.dumps(rec)


def _end(n: int = 1) -> str:
    return json.dumps({"end": "exitlaw.tree-trace", "rounds": n})


TRACE_CASES = [
    ("leading blank line", ["", HEAD, R0, _end()], ":1: blank line"),
    ("blank line inside", [HEAD, "", R0, _end()], ":2: blank line"),
    ("wrong schema", ['{"schema": "x", "version": 1}', R0, _end()], ":1: header must have schema"),
    (
        "version 99",
        ['{"schema": "exitlaw.tree-trace", "version": 99}', R0, _end()],
        "unsupported trace version 99",
    ),
    (
        "version true",
        ['{"schema": "exitlaw.tree-trace", "version": true}', R0, _end()],
        "unsupported trace version",
    ),
    (
        "meta list",
        ['{"schema": "exitlaw.tree-trace", "version": 1, "meta": [1]}', R0, _end()],
        ":1: header meta must be a JSON object",
    ),
    (
        "meta string",
        ['{"schema": "exitlaw.tree-trace", "version": 1, "meta": "x"}', R0, _end()],
        "meta must be",
    ),
    ("header array", ["[1, 2]", R0, _end()], ":1: expected a JSON object"),
    ("round not json", [HEAD, "{nope", _end(0)], ":2: not valid JSON"),
    ("round array", [HEAD, "[1]", _end(0)], ":2: expected a JSON object"),
    (
        "missing parent",
        [HEAD, '{"token": [0, 1], "edge_prob": [1, 0.5]}', _end()],
        "missing required field 'parent'",
    ),
    (
        "missing token",
        [HEAD, '{"parent": [-1, 0], "edge_prob": [1, 0.5]}', _end()],
        "missing required field 'token'",
    ),
    ("missing edge_prob", [HEAD, '{"parent": [-1, 0], "token": [0, 1]}', _end()], "'edge_prob'"),
    ("exit_node true", [HEAD, _round(exit_node=True), _end()], ":2: exit_node True"),
    ("exit_node out of tree", [HEAD, _round(exit_node=5), _end()], ":2: exit_node 5"),
    ("exit_node string", [HEAD, _round(exit_node="1"), _end()], "exit_node '1'"),
    ("exit_node float", [HEAD, _round(exit_node=1.0), _end()], "exit_node 1.0"),
    ("bonus negative", [HEAD, _round(bonus=-1), _end()], "bonus -1"),
    ("bonus true", [HEAD, _round(bonus=True), _end()], "bonus True"),
    ("bonus huge", [HEAD, _round(bonus=2**70), _end()], "bonus"),
    ("token string", [HEAD, _round(token=[0, "1"]), _end()], r":2: token\[1\] is '1'"),
    ("token true", [HEAD, _round(token=[0, True]), _end()], r"token\[1\] is True"),
    ("token huge", [HEAD, _round(token=[0, 2**64 + 1]), _end()], "outside the int64 range"),
    ("token float", [HEAD, _round(token=[0, 1.5]), _end()], "must hold integers"),
    ("parent string", [HEAD, _round(parent=[-1, "0"]), _end()], r"parent\[1\] is '0'"),
    (
        "parent forward",
        [HEAD, _round(parent=[-1, 2, 0], token=[0, 1, 2], edge_prob=[1, 0.5, 0.5]), _end()],
        "parents must come before children",
    ),
    (
        "duplicate siblings",
        [HEAD, _round(parent=[-1, 0, 0], token=[0, 1, 1], edge_prob=[1, 0.1, 0.1]), _end()],
        "same token 1",
    ),
    (
        "edge string",
        [HEAD, _round(edge_prob=[1, "0.5"]), _end()],
        "edge_probs must hold real numbers",
    ),
    (
        "edge above one",
        [HEAD, _round(edge_prob=[1, 1.5]), _end()],
        "node 1 has edge probability 1.5",
    ),
    (
        "edge nan",
        [HEAD, '{"parent": [-1, 0], "token": [0, 1], "edge_prob": [1, NaN]}', _end()],
        "node 1 has edge probability nan",
    ),
    ("edge length", [HEAD, _round(edge_prob=[1.0]), _end()], "edge_probs must have shape"),
    (
        "child mass",
        [HEAD, _round(parent=[-1, 0, 0], token=[0, 1, 2], edge_prob=[1, 0.7, 0.7]), _end()],
        "children of node 0 carry target mass 1.4",
    ),
    (
        "draft_logprob strings",
        [HEAD, _round(draft_logprob=["a", "b"]), _end()],
        "draft_logprob must hold real numbers",
    ),
    (
        "draft_logprob positive",
        [HEAD, _round(draft_logprob=[0.0, 0.5]), _end()],
        r"draft_logprob\[1\] = 0.5 is not a log-probability",
    ),
    (
        "draft_logprob nan",
        [
            HEAD,
            '{"parent": [-1, 0], "token": [0, 1], "edge_prob": [1, 0.5], "draft_logprob": [0, NaN]}',
            _end(),
        ],
        r"draft_logprob\[1\] = nan is not a log-probability",
    ),
    (
        "draft_logprob huge int",
        [HEAD, _round(draft_logprob=[0.0, 2**64 + 1]), _end()],
        "draft_logprob must hold real numbers, got entry 1 = 18446744073709551617",
    ),
    (
        "draft_logprob length",
        [HEAD, _round(draft_logprob=[0.0]), _end()],
        "draft_logprob has shape",
    ),
    ("target_rows ragged", [HEAD, _round(target_rows=[[0.5, 0.5], [1.0]]), _end()], "target_rows"),
    ("round out of order", [HEAD, _round(round=3), _end()], ":2: round index 3, expected 0"),
    ("round index true", [HEAD, _round(round=True), _end()], "round index True"),
    ("end count wrong", [HEAD, R0, _end(5)], ":3: end marker"),
    ("after end marker", [HEAD, R0, _end(), R0], ":4: content after the end marker"),
    ("no end marker", [HEAD, R0], "incomplete trace: no end marker"),
    ("header only, no end", [HEAD], "incomplete trace"),
]


def _write_lines(path, lines) -> None:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
