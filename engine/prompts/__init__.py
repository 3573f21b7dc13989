"""Prompts: the one reader of prompt sources and the one encoder, shared by bench and train.

Public names load their module on first access.
"""

from exitlaw.theory.module_faces import lazy_exports

_EXPORTS = {
    "PromptEncodingError": "encoding",
    "encode_prompt": "encoding",
    "encode_prompts": "encoding",
    "has_chat_template": "encoding",
    "chat_template_source": "encoding",
    "DATASETS": "records",
    "check_prompt_ids": "records",
    "TEXT_FIELDS": "records",
    "Prompt": "records",
    "PromptRecordError": "records",
    "iter_jsonl_objects": "records",
    "user_turns": "records",
    "read_record": "records",
    "named_set_prompt": "records",
    "load_prompt_set": "records",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
