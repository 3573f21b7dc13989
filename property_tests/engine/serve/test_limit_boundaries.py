"""Every request limit of `exitlaw serve` at both sides of its boundary: a request is refused iff one of
its terms exceeds its bound, with the refusal naming that limit; the position bound counts the prompt,
``max_tokens`` and one tree, and the memory bound receives every term that uses positions or memory
(the context, the tree and the rows). Values are drawn at ``limit - 1``, ``limit`` and ``limit + 1``."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.engine.serve import limits as limits_module
from exitlaw.engine.serve.errors import APIError
from exitlaw.engine.serve.limits import ServeLimits, check_request_size, check_request_work

EDGE = st.sampled_from((-1, 0, 1))


@settings(max_examples=300, deadline=None)
@given(
    bound=st.fixed_dictionaries(
        {"prompt": st.integers(2, 64), "tokens": st.integers(2, 64), "n": st.integers(2, 8)}
    ),
    tree_nodes=st.integers(1, 65),
    edges=st.tuples(EDGE, EDGE, EDGE, EDGE),
    memory_ok=st.booleans(),
)
def test_a_request_is_refused_iff_a_term_exceeds_its_bound(
    bound, tree_nodes, edges, memory_ok, monkeypatch_module
):
    de_p, de_t, de_n, de_pos = edges
    prompt, tokens, n = bound["prompt"] + de_p, bound["tokens"] + de_t, bound["n"] + de_n
    positions = prompt + tokens + tree_nodes - de_pos  # need - positions = de_pos
    seen = {}

    def fits(model_config, *, budget, context, rows, device, what, advice):
        seen.update(budget=budget, context=context, rows=rows)
        if not memory_ok:
            raise ValueError("over the device's free memory")

    monkeypatch_module.setattr(limits_module, "check_decode_fits", fits)
    lim = ServeLimits(
        max_prompt_tokens=bound["prompt"], max_tokens=bound["tokens"], max_n=bound["n"]
    )
    # the expected outcome, read from the limits' text (first broken limit in the order they are named)
    if prompt > bound["prompt"]:
        want = "max_prompt_tokens"
    elif tokens > bound["tokens"]:
        want = "max_tokens_limit"
    elif n > bound["n"]:
        want = "max_n"
    elif prompt + tokens + tree_nodes > positions:
        want = "context_length"
    elif not memory_ok:
        want = "work_bound"
    else:
        want = None
    cfg = SimpleNamespace(max_position_embeddings=positions)
    try:
        check_request_work(
            lim,
            prompt_tokens=prompt,
            max_tokens=tokens,
            n=n,
            model_config=cfg,
            tree_nodes=tree_nodes,
            device="cpu",
        )
        got = None
    except APIError as err:
        assert err.status == 400
        got = err.code
    assert got == want
    if want in (None, "work_bound"):  # the memory bound saw every term
        assert seen == {"budget": tree_nodes - 1, "context": prompt + tokens, "rows": n}


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@settings(max_examples=100, deadline=None)
@given(
    prompt=st.integers(1, 64),
    tokens=st.integers(1, 64),
    rows=st.integers(1, 32),
    tree_nodes=st.integers(1, 65),
    slack=EDGE,
)
def test_a_continuous_batch_is_bounded_by_its_rows_at_the_longest_context(
    prompt, tokens, rows, tree_nodes, slack
):
    """At start: the memory of one round of ``--max-batch`` rows, each at prompt limit + max_tokens limit
    with one tree, against the device's free memory (refused iff over it, naming the flags)."""
    from exitlaw.engine.decode.work_bounds import round_memory
    from exitlaw.engine.models.config import qwen3_config
    from exitlaw.engine.models.tiny import TinySpec
    from exitlaw.engine.serve.limits import check_batch_fits

    cfg = qwen3_config(TinySpec().lm_sizes())
    lim = ServeLimits(max_prompt_tokens=prompt, max_tokens=tokens)
    need = round_memory(cfg, budget=tree_nodes - 1, context=prompt + tokens, rows=rows).total
    free = need - slack  # -1: one byte more than needed is free ... +1: one byte short
    import exitlaw.engine.decode.work_bounds as wb

    real, stubbed = wb.available_bytes, limits_module.check_decode_fits
    wb.available_bytes = lambda device: free
    limits_module.check_decode_fits = (
        wb.check_decode_fits
    )  # the real bound (the test above stubs it)
    try:  # (hypothesis and function-scoped monkeypatch do not mix)
        if free < need:
            with pytest.raises(
                ValueError, match="--max-batch.*lower --max-batch, --max-prompt-tokens"
            ):
                check_batch_fits(
                    lim, max_batch=rows, model_config=cfg, tree_nodes=tree_nodes, device="cpu"
                )
        else:
            check_batch_fits(
                lim, max_batch=rows, model_config=cfg, tree_nodes=tree_nodes, device="cpu"
            )
    finally:
        wb.available_bytes, limits_module.check_decode_fits = real, stubbed


@settings(max_examples=200, deadline=None)
@given(max_n=st.integers(1, 16), prompts=st.integers(1, 6), edge=EDGE)
def test_a_list_of_prompts_is_refused_iff_its_choices_exceed_max_n(max_n, prompts, edge):
    """``prompts x n`` choices against ``--max-n``, with ``n`` itself within it, at the product's
    boundary (``n`` at ``max_n // prompts`` and one either side): refused iff the product is over,
    naming the product and the flag."""
    n = min(max(max_n // prompts + edge, 1), max_n)
    lim = ServeLimits(max_n=max_n)
    try:
        check_request_size(lim, max_tokens=1, n=n, prompts=prompts)
        got = None
    except APIError as err:
        assert err.status == 400 and err.param == "prompt" and "(--max-n)" in err.message
        assert f"{prompts} prompts x n {n} = {prompts * n} choices" in err.message
        got = err.code
    assert got == ("max_n" if prompts * n > max_n else None)
