"""The server audit: is an OpenAI-compatible server lossless against a reference, at a stated error rate?

An HTTP client plus the kit's calibrated statistics (no torch, no JAX); public names load on first access.
"""

from . import plan, run, transport
from .client import Client, ServerFailed, ServerRefused, Unreachable
from .plan import *
from .report import AuditReport, Divergence, TestResult, format_audit
from .run import *
from .transport import *
from .two_sample import pooled_power, two_sample_chisquare, two_sample_power, two_sample_size

__all__ = [
    *plan.__all__,
    *run.__all__,
    *transport.__all__,
    "AuditReport",
    "Client",
    "Divergence",
    "ServerFailed",
    "ServerRefused",
    "TestResult",
    "Unreachable",
    "format_audit",
    "pooled_power",
    "two_sample_chisquare",
    "two_sample_power",
    "two_sample_size",
]
