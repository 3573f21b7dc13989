"""The mini corpus: deterministic by-file split and a lossless byte-level tokenizer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exitlaw.paper_repro.mini.corpus import (
    MASK_TOKEN,
    encode_documents,
    list_code_files,
    load_prose_topics,
    load_tokenizer,
    make_split,
    split_names,
    train_tokenizer,
)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    split = make_split()
    texts = split.code_texts("train")[:20] + split.prose_texts("train")[:10]
    out = tmp_path_factory.mktemp("tok")
    train_tokenizer(texts, 400, out)
    return load_tokenizer(out)


def test_split_is_deterministic_disjoint_and_complete():
    a, b = make_split(seed=3), make_split(seed=3)
    assert a == b
    files = list_code_files()
    assert sorted(a.train_code + a.heldout_code) == files
    assert not set(a.train_code) & set(a.heldout_code)
    assert not set(a.train_prose) & set(a.heldout_prose)
    assert sorted(a.train_prose + a.heldout_prose) == sorted(load_prose_topics())
    assert a.heldout_code and a.heldout_prose
    assert make_split(seed=4).heldout_code != a.heldout_code


@given(
    st.lists(
        st.text(alphabet="abcdefghij/_.", min_size=1, max_size=12),
        min_size=2,
        max_size=40,
        unique=True,
    ),
    st.randoms(),
)
def test_split_does_not_depend_on_order_or_on_other_files(names, rnd):
    train, held = split_names(names, 0.3, seed=1)
    shuffled = list(names)
    rnd.shuffle(shuffled)
    assert split_names(shuffled, 0.3, seed=1) == (train, held)
    # a file's side never changes when other files are added or removed
    sub = shuffled[: len(shuffled) // 2]
    sub_train, sub_held = split_names(sub, 0.3, seed=1)
    assert set(sub_held) == set(held) & set(sub)
    assert set(sub_train) == set(train) & set(sub)


def test_split_rejects_bad_fraction():
    with pytest.raises(ValueError, match="heldout_fraction"):
        split_names(["a", "b"], 1.5, seed=0)


@given(st.text(max_size=200))
def test_tokenizer_round_trips_any_text(tokenizer, text):
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids) == text


def test_tokenizer_loads_through_autotokenizer_with_special_tokens(tokenizer):
    assert len(tokenizer) == 400
    assert tokenizer.convert_ids_to_tokens(tokenizer.mask_token_id) == MASK_TOKEN
    ids = encode_documents(tokenizer, ["x = 1\n", "y = 2\n"])
    assert (ids == tokenizer.eos_token_id).sum() == 2
    assert tokenizer.decode(ids.tolist(), skip_special_tokens=True) == "x = 1\ny = 2\n"


def test_load_tokenizer_names_a_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        load_tokenizer(tmp_path)
