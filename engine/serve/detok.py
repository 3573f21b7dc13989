"""Token ids to text for ``exitlaw serve``: one decode for every reply, and its incremental form for streams.

:func:`decode_text` is the text of a choice (non-streamed, stop-string cuts, streams alike), with the
request's ``skip_special_tokens`` and ``spaces_between_special_tokens`` (vLLM's fields and defaults) and
no clean-up of tokenization spaces (a later token could otherwise rewrite text already sent).

:class:`IncrementalText` turns a stream of blocks into text deltas that never hold part of a character:
a byte-level tokenizer splits a multi-byte character (CJK, emoji) over tokens, and the decode of a
prefix ends in U+FFFD until the character's last byte arrives; those trailing U+FFFD are held back (and
the last ``hold`` characters, which a stop string could still claim). So the deltas are always a prefix of
the final text, and :meth:`IncrementalText.finish` sends the rest: the concatenated stream equals the
non-streamed text exactly.
"""

from __future__ import annotations

REPLACEMENT = "\ufffd"


def special_ids(tokenizer) -> frozenset[int]:
    """The tokenizer's special tokens (those ``skip_special_tokens`` removes)."""
    ids = getattr(tokenizer, "all_special_ids", None) or ()
    return frozenset(int(i) for i in ids)


def decode_text(
    tokenizer, ids, *, skip_special_tokens: bool = True, spaces_between_special_tokens: bool = True
) -> str:
    """The text of ``ids``. With ``skip_special_tokens`` false and ``spaces_between_special_tokens``
    true (vLLM's default), each special token stands apart, joined to its neighbours with one space, as
    vLLM and Hugging Face's slow tokenizers write them; false writes them adjacent. With special tokens
    skipped the second flag has nothing to space."""
    ids = [int(t) for t in ids]
    plain = dict(skip_special_tokens=skip_special_tokens, clean_up_tokenization_spaces=False)
    if skip_special_tokens or not spaces_between_special_tokens:
        return tokenizer.decode(ids, **plain)
    specials = special_ids(tokenizer)
    if not any(t in specials for t in ids):
        return tokenizer.decode(ids, **plain)
    parts, run = [], []
    for t in ids:
        if t in specials:
            if run:
                parts.append(tokenizer.decode(run, **plain))
                run = []
            parts.append(tokenizer.decode([t], **plain))
        else:
            run.append(t)
    if run:
        parts.append(tokenizer.decode(run, **plain))
    return " ".join(parts)


def stop_cut(text: str, stops, include: bool = False) -> int | None:
    """Where ``text`` ends at its earliest stop string (after it with ``include``); None without one."""
    hits = [(text.index(s), len(s)) for s in stops if s in text]
    if not hits:
        return None
    at, size = min(hits)
    return at + size if include else at


class IncrementalText:
    """The text deltas of one streamed choice (module docstring). ``text(ids)`` decodes a token list."""

    def __init__(self, text, stops=(), include_stop: bool = False):
        self.text, self.stops, self.include_stop = text, tuple(stops), include_stop
        self.hold = max((len(s) for s in self.stops), default=1) - 1
        self.ids: list[int] = []
        self.sent = ""

    def add(self, block) -> str:
        """The new text the block makes safe to send (possibly empty)."""
        self.ids.extend(int(t) for t in block)
        full = self.text(self.ids)
        cut = stop_cut(full, self.stops, self.include_stop)
        if cut is not None:
            visible = full[:cut]
        else:
            visible = full.rstrip(REPLACEMENT)  # a character whose last bytes are still to come
            visible = visible[: max(len(visible) - self.hold, 0)]
        return self._send(visible)

    def finish(self, final: str) -> str:
        """The rest of the choice's final text (the non-streamed text of its tokens)."""
        return self._send(final)

    def _send(self, visible: str) -> str:
        if len(visible) <= len(self.sent) or not visible.startswith(self.sent):
            return ""
        delta, self.sent = visible[len(self.sent) :], visible
        return delta


__all__ = ["IncrementalText", "decode_text", "special_ids", "stop_cut", "REPLACEMENT"]
