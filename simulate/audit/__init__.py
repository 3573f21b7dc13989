"""The server audit: is an OpenAI-compatible server lossless against a reference, at a stated error rate?

An HTTP client plus the kit's calibrated statistics (no torch, no JAX); public names load on first access.
"""

from .client import Client, ServerFailed, ServerRefused, Unreachable
from .plan import AuditConfig, AuditUsageError, Budget, plan_budget, read_prompts
from .report import AuditReport, Divergence, format_audit, TestResult
from .run import run_audit
from .two_sample import pooled_power, two_sample_chisquare, two_sample_power, two_sample_size

__all__ = [
    "AuditConfig",
    "AuditUsageError",
    "Budget",
    "plan_budget",
    "read_prompts",
    "AuditReport",
    "Divergence",
    "TestResult",
    "format_audit",
    "run_audit",
    "Client",
    "Unreachable",
    "ServerRefused",
    "ServerFailed",
    "two_sample_chisquare",
    "two_sample_power",
    "two_sample_size",
    "pooled_power",
]
