"""Tiny real tokenizers with real chat templates, saved in the Hugging Face on-disk format.

``build_tokenizer(vocab_size, style)`` trains a byte-level BPE (``tokenizers``) on a
fixed string and wraps it as a ``PreTrainedTokenizerFast`` whose special tokens and
chat template follow one model family's conventions (templates written for exitlaw):

* ``qwen3``: ``<|im_start|>ROLE\\n...<|im_end|>\\n``; the generation prompt is
  ``<|im_start|>assistant\\n``, followed by an empty ``<think>\\n\\n</think>\\n\\n`` block
  when ``enable_thinking`` is false; earlier assistant turns lose their reasoning
  (text up to ``</think>``); no BOS. EOS ``<|im_end|>``.
* ``llama3``: ``<|begin_of_text|>`` then ``<|start_header_id|>ROLE<|end_header_id|>\\n\\n
  ...<|eot_id|>`` per message; plain encoding also starts with ``<|begin_of_text|>``.
  EOS ``<|eot_id|>``.
* ``gemma``: ``<bos>`` then ``<start_of_turn>user|model\\n...<end_of_turn>\\n``; no system
  role; plain encoding starts with ``<bos>``. EOS ``<eos>``, turns end with ``<end_of_turn>``.

Every style has a ``mask`` token for the DFlash drafter. ``save_pretrained`` writes the
tokenizer and its template; ``AutoTokenizer.from_pretrained`` reads them back.
"""

from __future__ import annotations

from dataclasses import dataclass

_CORPUS = (
    "Tree speculative decoding drafts a tree of tokens and verifies it with one target forward. "
    "The exit law w(v) = P(v) rho(v) sums to one; coverage is the expected number of accepted tokens. "
    "def add(a, b):\n    return a + b\n\nfor i in range(10):\n    print(i * i)\n"
    "Question: what is 12 + 30? Answer: 42. Please reason step by step."
) * 4

QWEN3_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'assistant' %}{% set body = (m['content'].split('</think>') | last).lstrip('\n') %}"
    "{% else %}{% set body = m['content'] %}{% endif %}"
    "<|im_start|>{{ m['role'] }}\n{{ body }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}"
    "{% endif %}"
)
LLAMA3_TEMPLATE = (
    "{{ bos_token }}"
    "{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n{{ m['content'] | trim }}<|eot_id|>"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
GEMMA_TEMPLATE = (
    "{{ bos_token }}"
    "{% for m in messages %}"
    "{% if m['role'] not in ['user', 'assistant'] %}{{ raise_exception('roles are user and assistant') }}{% endif %}"
    "<start_of_turn>{{ 'model' if m['role'] == 'assistant' else 'user' }}\n{{ m['content'] | trim }}<end_of_turn>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


@dataclass(frozen=True)
class ChatStyle:
    """One family's special tokens and chat template."""

    name: str
    special_tokens: tuple[str, ...]
    eos: str
    pad: str
    mask: str
    end_of_turn: str
    template: str
    bos: str | None = None


STYLES = {
    "qwen3": ChatStyle(
        "qwen3",
        ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|mask|>"),
        eos="<|im_end|>",
        pad="<|endoftext|>",
        mask="<|mask|>",
        end_of_turn="<|im_end|>",
        template=QWEN3_TEMPLATE,
    ),
    "llama3": ChatStyle(
        "llama3",
        (
            "<|begin_of_text|>",
            "<|end_of_text|>",
            "<|start_header_id|>",
            "<|end_header_id|>",
            "<|eot_id|>",
            "<|mask|>",
        ),
        eos="<|eot_id|>",
        pad="<|end_of_text|>",
        mask="<|mask|>",
        end_of_turn="<|eot_id|>",
        template=LLAMA3_TEMPLATE,
        bos="<|begin_of_text|>",
    ),
    "gemma": ChatStyle(
        "gemma",
        ("<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>", "<mask>"),
        eos="<eos>",
        pad="<pad>",
        mask="<mask>",
        end_of_turn="<end_of_turn>",
        template=GEMMA_TEMPLATE,
        bos="<bos>",
    ),
}


def chat_style(name: str) -> ChatStyle:
    if name not in STYLES:
        raise ValueError(f"unknown chat style {name!r}; choose {', '.join(STYLES)}")
    return STYLES[name]


def build_tokenizer(vocab_size: int = 320, style: str = "qwen3"):
    """A byte-level BPE of at most ``vocab_size`` tokens with ``style``'s special tokens and chat template."""
    from tokenizers import (  # lazy: `exitlaw --help` loads this module (the chat STYLES) through the models face
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import (  # lazy: as tokenizers above (transformers takes 0.7 s to import)
        PreTrainedTokenizerFast,
    )

    st = chat_style(style)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(st.special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([_CORPUS], trainer=trainer)
    if tok.get_vocab_size() > vocab_size:
        raise ValueError(
            f"tokenizer has {tok.get_vocab_size()} tokens, more than vocab_size {vocab_size}"
        )
    # plain encoding starts a sequence with BOS, as these families' tokenizers do
    if st.bos is not None:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{st.bos} $A",
            pair=f"{st.bos} $A {st.bos} $B",
            special_tokens=[(st.bos, tok.token_to_id(st.bos))],
        )
    kw = {"bos_token": st.bos} if st.bos is not None else {}
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=st.eos,
        pad_token=st.pad,
        additional_special_tokens=list(st.special_tokens),
        **kw,
    )
    fast.chat_template = st.template
    return fast


def stop_token_ids(tokenizer, style: str) -> list[int]:
    """EOS and end-of-turn ids (what a model of this family stops on), sorted, distinct."""
    st = chat_style(style)
    return sorted(
        {tokenizer.convert_tokens_to_ids(st.eos), tokenizer.convert_tokens_to_ids(st.end_of_turn)}
    )


__all__ = [
    "ChatStyle",
    "STYLES",
    "chat_style",
    "build_tokenizer",
    "stop_token_ids",
    "QWEN3_TEMPLATE",
    "LLAMA3_TEMPLATE",
    "GEMMA_TEMPLATE",
]
