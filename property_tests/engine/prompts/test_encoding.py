"""The one prompt encoder on real tokenizers with real chat templates (Qwen3, Llama-3, Gemma styles).

Each tokenizer is built by the ``tokenizers`` library, saved in the Hugging Face format and
loaded back with ``AutoTokenizer``; the expected prompts are written out by hand below.
"""

from __future__ import annotations

import pytest

from exitlaw.engine.models.tiny_tokenizer import build_tokenizer, stop_token_ids
from exitlaw.engine.prompts.encoding import PromptEncodingError, encode_prompt
from exitlaw.engine.prompts.records import Prompt
from exitlaw.engine.training.data import encode_prompts

Q = "What is 12 + 30?"
RENDERED = {  # one user turn, generation prompt, thinking disabled where the template knows it
    "qwen3": f"<|im_start|>user\n{Q}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    "llama3": f"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n{Q}<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n",
    "gemma": f"<bos><start_of_turn>user\n{Q}<end_of_turn>\n<start_of_turn>model\n",
}
FIRST_SPECIAL = {"qwen3": "<|im_start|>", "llama3": "<|begin_of_text|>", "gemma": "<bos>"}


@pytest.fixture(scope="module", params=sorted(RENDERED))
def saved(request, tmp_path_factory):
    from transformers import AutoTokenizer

    d = tmp_path_factory.mktemp(request.param)
    build_tokenizer(320, request.param).save_pretrained(str(d))
    return request.param, AutoTokenizer.from_pretrained(str(d))


def _ids(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def test_chat_prompt_encodes_to_the_hand_written_rendering(saved):
    style, tok = saved
    ids = encode_prompt(tok, Q, chat=True)
    assert type(ids) is list and all(type(t) is int for t in ids)
    assert tok.decode(ids) == RENDERED[style]
    assert ids == _ids(tok, RENDERED[style])
    assert ids[0] == tok.convert_tokens_to_ids(
        FIRST_SPECIAL[style]
    )  # special tokens are single ids
    assert len(tok) == 320


def test_train_encoder_returns_token_ids_not_batch_encoding_keys(saved):
    """With transformers 5 ``list(apply_chat_template(..., tokenize=True))`` is ['input_ids', 'attention_mask']."""
    style, tok = saved
    assert (
        encode_prompts(tok, [Q, Prompt(turns=(Q, "later"))], chat=True)
        == [_ids(tok, RENDERED[style])] * 2
    )
    assert encode_prompts(tok, [[7, 8, 9], Prompt(ids=(4, 5))], chat=True) == [[7, 8, 9], [4, 5]]


def test_plain_encoding_uses_the_tokenizers_own_sequence_start(saved):
    style, tok = saved
    ids = encode_prompt(tok, Q, chat=False)
    assert (
        tok.decode(ids)
        == {"qwen3": Q, "llama3": "<|begin_of_text|>" + Q, "gemma": "<bos>" + Q}[style]
    )


def test_enable_thinking_reaches_only_templates_that_read_it(saved, monkeypatch):
    style, tok = saved
    seen = {}
    real = tok.apply_chat_template

    def spy(messages, **kw):
        seen.update(kw)
        return real(messages, **kw)

    monkeypatch.setattr(tok, "apply_chat_template", spy)
    ids = encode_prompt(tok, Q, chat=True, enable_thinking=True)
    if style == "qwen3":
        assert seen["enable_thinking"] is True
        assert tok.decode(ids) == f"<|im_start|>user\n{Q}<|im_end|>\n<|im_start|>assistant\n"
    else:
        assert "enable_thinking" not in seen and tok.decode(ids) == RENDERED[style]


def test_multi_turn_history_renders_every_turn():
    tok = build_tokenizer(320, "qwen3")
    history = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "<think>plan</think>\n\nb"},
        {"role": "user", "content": "c"},
    ]
    assert tok.decode(encode_prompt(tok, history, chat=True)) == (
        "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n<|im_start|>user\nc<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    llama = build_tokenizer(320, "llama3")
    assert (
        llama.decode(encode_prompt(llama, history[:2] + [history[2]], chat=True)).count(
            "<|eot_id|>"
        )
        == 3
    )
    gemma = build_tokenizer(320, "gemma")
    assert stop_token_ids(gemma, "gemma") == sorted(
        {gemma.convert_tokens_to_ids("<eos>"), gemma.convert_tokens_to_ids("<end_of_turn>")}
    )


class _OddTokenizer:
    """A tokenizer whose chat template call returns ``ret`` (what the encoder must refuse)."""

    chat_template = "{{ messages }}"

    def __init__(self, ret):
        self.ret = ret

    def apply_chat_template(self, messages, **kw):
        return self.ret


@pytest.mark.parametrize(
    "ret, message",
    [
        (["input_ids", "attention_mask"], "not token ids"),  # list() of a BatchEncoding
        ({"attention_mask": [1]}, "without input_ids"),
        ("<|im_start|>user", "returned str"),
        ([[1, 2]], "not token ids"),
        ([], "no tokens"),
    ],
)
def test_anything_but_token_ids_from_the_tokenizer_is_a_named_error(ret, message):
    with pytest.raises(PromptEncodingError, match=message):
        encode_prompt(_OddTokenizer(ret), Q, chat=True)


def test_bad_prompts_are_named_errors():
    tok = build_tokenizer(320, "qwen3")
    tok.chat_template = None
    with pytest.raises(PromptEncodingError, match="no chat template"):
        encode_prompt(tok, Q, chat=True)
    with pytest.raises(PromptEncodingError, match="a conversation needs chat=True"):
        encode_prompt(
            tok,
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b"},
                {"role": "user", "content": "c"},
            ],
            chat=False,
        )
    with pytest.raises(PromptEncodingError, match="message 0 must be"):
        encode_prompt(tok, [{"role": "user"}], chat=False)
    with pytest.raises(PromptEncodingError, match="not token ids"):
        encode_prompt(tok, [3, -1], chat=False)
    with pytest.raises(PromptEncodingError, match="empty conversation"):
        encode_prompt(tok, [], chat=False)
