"""What every decoding bench reads and how it runs them, as one object (``bench decoding``, its batched
mode and ``bench batch`` take it whole; the command line builds it once from its flags)."""

from __future__ import annotations

from dataclasses import dataclass

from exitlaw.theory.sampling_settings import SamplingSettings


@dataclass(frozen=True)
class BenchSource:
    """The model pair, the prompt set and the run settings a decoding bench shares with the others.

    ``dataset``: a prompt set as :func:`~exitlaw.engine.prompts.records.load_prompt_set` reads it;
    ``device`` ``None``: cuda if available; ``dtype`` ``"auto"``: the checkpoint's;
    ``masked_attention``: the target's masked-forward kernels
    (:data:`~exitlaw.engine.models.target.MASKED_ATTENTION`); ``filters``: the sampling filters every
    method applies (their temperature is replaced by each bench temperature; ``None``: off).
    """

    target: str
    draft: str
    dataset: str = "gsm8k"
    max_new_tokens: int = 64
    num_prompts: int | None = None
    seed: int = 0
    device: str | None = None
    dtype: str = "auto"
    masked_attention: str = "math"
    warmup: int = 1
    filters: SamplingSettings | None = None


__all__ = ["BenchSource"]
