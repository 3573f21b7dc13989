"""One prompt-record reader for bench and train: every supported shape, and named errors."""

import json

import pytest

from exitlaw.engine.bench import load_conversations
from exitlaw.engine.prompt_records import iter_jsonl_objects, user_turns
from exitlaw.engine.train_data import load_prompts


def test_every_record_shape_gives_its_user_turns():
    assert user_turns({"turns": ["a", "b"]}, "x") == ["a", "b"]
    assert user_turns({"conversations": [{"from": "system", "value": "s"}, {"from": "human", "value": "q1"},
                                         {"from": "gpt", "value": "r"}, {"from": "human", "value": "q2"}]},
                      "x") == ["q1", "q2"]
    assert user_turns({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]},
                      "x") == ["hi"]
    assert user_turns({"question": "why?"}, "x") == ["why?"]


@pytest.mark.parametrize("rec, message", [
    ({"turns": "not a list"}, "'turns' must be a list of strings"),
    ({"conversations": [{"from": "gpt", "value": "only the model"}]}, "no user turn"),
    ({"messages": [{"role": "user"}]}, "has no text"),
    ({"nothing": 1}, "no turns, conversations, messages"),
])
def test_bad_records_are_named(rec, message):
    with pytest.raises(ValueError, match=message):
        user_turns(rec, "f.jsonl:3")


def test_bench_and_train_read_the_same_file_the_same_way(tmp_path):
    path = tmp_path / "p.jsonl"
    recs = [{"conversations": [{"from": "human", "value": "first"}, {"from": "gpt", "value": "x"},
                               {"from": "human", "value": "second"}]},
            {"prompt": "solo"}]
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n\n")
    assert load_conversations(f"jsonl:{path}") == [["first", "second"], ["solo"]]
    assert load_prompts(f"jsonl:{path}") == ["first", "solo"]


def test_jsonl_errors_name_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "ok"}\n[1, 2]\n')
    with pytest.raises(ValueError, match="bad.jsonl:2: expected a JSON object"):
        list(iter_jsonl_objects(path))
    path.write_text('{"prompt": "ok"}\n{oops\n')
    with pytest.raises(ValueError, match="bad.jsonl:2: not valid JSON"):
        load_conversations(f"jsonl:{path}")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_prompts(f"jsonl:{tmp_path / 'missing.jsonl'}")
