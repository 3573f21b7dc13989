"""One prompt-record reader for bench and train: every source and record shape, and named errors."""

import json

import pytest

from exitlaw.engine.prompts.records import (
    DATASETS,
    Prompt,
    PromptRecordError,
    iter_jsonl_objects,
    load_prompt_set,
    read_record,
    user_turns,
)
from exitlaw.engine.training.data import load_prompts


def _write(path, records):
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n\n")
    return path


def test_every_record_shape_gives_its_user_turns():
    assert user_turns({"turns": ["a", "b"]}, "x") == ["a", "b"]
    assert user_turns(
        {
            "conversations": [
                {"from": "system", "value": "s"},
                {"from": "human", "value": "q1"},
                {"from": "gpt", "value": "r"},
                {"from": "human", "value": "q2"},
            ]
        },
        "x",
    ) == ["q1", "q2"]
    assert user_turns(
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]},
        "x",
    ) == ["hi"]
    assert user_turns({"question": "why?", "answer": "42"}, "x") == ["why?"]  # GSM8K rows
    assert user_turns({"problem": "2+2?", "solution": "4"}, "x") == ["2+2?"]  # MATH-500 rows
    assert user_turns({"task_id": "H/0", "prompt": "def f():", "test": "..."}, "x") == [
        "def f():"
    ]  # HumanEval
    assert user_turns({"prompt": ["t1", "t2"], "category": "writing"}, "x") == [
        "t1",
        "t2",
    ]  # Hub MT-Bench rows
    assert read_record({"prompt_ids": [3, 1, 4]}, "x") == Prompt(ids=(3, 1, 4), where="x")


@pytest.mark.parametrize(
    "rec, message",
    [
        ({"turns": "not a list"}, "'turns' must be a list of strings"),
        ({"conversations": [{"from": "gpt", "value": "only the model"}]}, "no user turn"),
        ({"messages": [{"role": "user"}]}, "has no text"),
        ({"nothing": 1}, "no prompt_ids, turns, conversations, messages"),
        ({"prompt_ids": [1, -2]}, "prompt_ids must be a non-empty list of token ids"),
        ({"prompt_ids": []}, "prompt_ids must be a non-empty list of token ids"),
        ({"prompt_ids": [1, True]}, "prompt_ids must be a non-empty list of token ids"),
    ],
)
def test_bad_records_are_named(rec, message):
    with pytest.raises(PromptRecordError, match=message):
        read_record(rec, "f.jsonl:3")


def test_every_source_grammar_reads_through_the_one_reader(tmp_path):
    recs = [
        {
            "conversations": [
                {"from": "human", "value": "first"},
                {"from": "gpt", "value": "x"},
                {"from": "human", "value": "second"},
            ]
        },
        {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "m"}]},
        {"prompt": "solo"},
        {"prompt_ids": [5, 6]},
    ]
    path = _write(tmp_path / "p.jsonl", recs)
    want = [("first", "second"), ("m",), ("solo",), ()]
    for source in (f"jsonl:{path}", str(path)):
        got = load_prompt_set(source)
        assert [p.turns for p in got] == want and got[3].ids == (5, 6)
        assert got[0].where == f"{path}:1" and got[3].where == f"{path}:4"
    assert len(load_prompt_set(str(path), limit=2)) == 2
    assert load_prompts(f"jsonl:{path}") == [
        "first",
        "m",
        "solo",
        [5, 6],
    ]  # train: first turn or ids


@pytest.mark.parametrize(
    "name, row, first",
    [
        (
            "gsm8k",
            {"question": "Q?", "answer": "A"},
            "Q?" + "\nPlease reason step by step, and put your final answer within \\boxed{}.",
        ),
        (
            "math500",
            {"problem": "P?", "solution": "S"},
            "P?\nPlease reason step by step, and put your final answer within \\boxed{}.",
        ),
        (
            "humaneval",
            {"task_id": "HumanEval/0", "prompt": "def f():\n"},
            "Write a solution to the following problem and make sure that it passes the tests:\n```python\ndef f():\n\n```",
        ),
    ],
)
def test_named_sets_read_from_a_local_copy_get_the_sets_wording(tmp_path, name, row, first):
    path = _write(tmp_path / f"{name}.jsonl", [row, row])
    got = load_prompt_set(f"{name}={path}", limit=1)
    assert [p.turns for p in got] == [(first,)]


def test_mt_bench_local_copy_keeps_every_turn(tmp_path):
    path = _write(
        tmp_path / "mt.jsonl", [{"prompt": ["one", "two"], "category": "writing", "prompt_id": 1}]
    )
    assert [p.turns for p in load_prompt_set(f"mt-bench={path}")] == [("one", "two")]
    bad = _write(tmp_path / "bad.jsonl", [{"turns": ["one"]}])
    with pytest.raises(
        PromptRecordError, match="bad.jsonl:1: a mt-bench row needs the field 'prompt'"
    ):
        load_prompt_set(f"mt-bench={bad}")
    assert set(DATASETS) == {"gsm8k", "math500", "humaneval", "mt-bench"}


def test_jsonl_errors_name_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "ok"}\n[1, 2]\n')
    with pytest.raises(PromptRecordError, match="bad.jsonl:2: expected a JSON object"):
        list(iter_jsonl_objects(path))
    path.write_text('{"prompt": "ok"}\n{oops\n')
    with pytest.raises(PromptRecordError, match="bad.jsonl:2: not valid JSON"):
        load_prompt_set(f"jsonl:{path}")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_prompt_set(f"jsonl:{tmp_path / 'missing.jsonl'}")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(PromptRecordError, match="holds no prompts"):
        load_prompt_set(str(tmp_path / "empty.jsonl"))
    with pytest.raises(PromptRecordError, match="must be gsm8k"):
        load_prompt_set("prompts.txt")
    with pytest.raises(PromptRecordError, match="limit must be >= 1"):
        load_prompt_set(str(path), limit=0)


def test_a_prompt_holds_turns_or_ids_not_both():
    with pytest.raises(PromptRecordError, match="exactly one"):
        Prompt(turns=("a",), ids=(1,), where="x")
    with pytest.raises(PromptRecordError, match="exactly one"):
        Prompt(where="x")
    assert Prompt(turns=("a", "b")).to_json() == {"turns": ["a", "b"]} and Prompt(
        ids=(1,)
    ).to_json() == {"ids": [1]}
