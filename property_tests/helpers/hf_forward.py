"""The transformers forward the lean-forward tests compare with (the exact twin)."""

from __future__ import annotations


def transformers_forward(model, ids, pos, mask, cache, layer_ids, logits_to_keep=None):
    """Logits and ``{layer: hidden state}`` of ``layer_ids`` from the model's own forward, with a cache
    (``logits_to_keep`` passed on when given)."""
    keep = {} if logits_to_keep is None else {"logits_to_keep": logits_to_keep}
    out = model(
        input_ids=ids,
        position_ids=pos,
        attention_mask=mask,
        cache=cache,
        use_cache=True,
        output_hidden_states=True,
        **keep,
    )
    return out.logits, {i: out.hidden_states[i + 1] for i in layer_ids}
