"""exitlaw: exact exit laws, verifier conformance and tree speculative decoding.

Parts: ``exitlaw.theory`` (exact laws), ``exitlaw.simulate`` (samplers,
statistics, synthetic models), ``exitlaw.engine`` (PyTorch, real checkpoints),
``exitlaw.figures`` and ``exitlaw.paper_repro``.
"""

__version__ = "0.1.0"
