"""Prompts: the one reader of prompt sources and the one encoder, shared by bench and train."""

from .encoding import (
    chat_template_source,
    encode_prompt,
    encode_prompts,
    has_chat_template,
    PromptEncodingError,
)
from .records import (
    check_prompt_ids,
    DATASETS,
    iter_jsonl_objects,
    load_prompt_set,
    named_set_prompt,
    Prompt,
    PromptRecordError,
    read_record,
    TEXT_FIELDS,
    user_turns,
)

__all__ = [
    "PromptEncodingError",
    "encode_prompt",
    "encode_prompts",
    "has_chat_template",
    "chat_template_source",
    "DATASETS",
    "check_prompt_ids",
    "TEXT_FIELDS",
    "Prompt",
    "PromptRecordError",
    "iter_jsonl_objects",
    "user_turns",
    "read_record",
    "named_set_prompt",
    "load_prompt_set",
]
