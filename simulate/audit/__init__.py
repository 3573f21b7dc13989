"""The server audit: is an OpenAI-compatible server lossless against a reference, at a stated error rate?

An HTTP client plus the kit's calibrated statistics (no torch, no JAX); public names load on first access.
"""

from exitlaw.theory.module_faces import lazy_exports

_EXPORTS = {
    "AuditConfig": "plan",
    "AuditUsageError": "plan",
    "Budget": "plan",
    "plan_budget": "plan",
    "read_prompts": "plan",
    "AuditReport": "report",
    "Divergence": "report",
    "TestResult": "report",
    "format_audit": "report",
    "run_audit": "run",
    "Client": "client",
    "Unreachable": "client",
    "ServerRefused": "client",
    "ServerFailed": "client",
    "two_sample_chisquare": "two_sample",
    "two_sample_power": "two_sample",
    "two_sample_size": "two_sample",
    "pooled_power": "two_sample",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
