"""The conformance kit: test cases, calibrated checks, calls into a user's verifier, boundary coins, verifier formats (fixed-tree and chain), settings mode and the report."""

from . import calls, cases, checks, formats
from .boundary import (
    F32_BELOW_ONE,
    F64_BELOW_ONE,
    BoundaryGenerator,
    BoundaryReport,
    boundary_values,
    format_boundary,
    run_boundary,
    schedules,
)
from .calls import *
from .cases import *
from .chain_formats import (
    CHAIN_FORMATS,
    PLACEHOLDER,
    ChainFormatError,
    adapt_chain_verifier,
    check_chain_format,
    from_vllm_result,
    to_vllm,
)
from .checks import *
from .conformance import (
    BAD_INPUT,
    CHECKS,
    EXIT_CODES,
    INSUFFICIENT,
    MARGINALLY_EXACT,
    PRECEDENCE,
    VERIFIER_FAILED,
    KitReport,
    check_verifier,
    run_kit,
)
from .formats import *
from .report import format_report
from .settings_cases import (
    DEFAULT_PANEL,
    HashedLogits,
    ProcessedTarget,
    SettingsCase,
    settings_cases,
)

__all__ = [
    *calls.__all__,
    *cases.__all__,
    *checks.__all__,
    *formats.__all__,
    "BAD_INPUT",
    "BoundaryGenerator",
    "BoundaryReport",
    "CHAIN_FORMATS",
    "CHECKS",
    "ChainFormatError",
    "DEFAULT_PANEL",
    "EXIT_CODES",
    "F32_BELOW_ONE",
    "F64_BELOW_ONE",
    "HashedLogits",
    "INSUFFICIENT",
    "KitReport",
    "MARGINALLY_EXACT",
    "PLACEHOLDER",
    "PRECEDENCE",
    "ProcessedTarget",
    "SettingsCase",
    "VERIFIER_FAILED",
    "adapt_chain_verifier",
    "boundary_values",
    "check_chain_format",
    "check_verifier",
    "format_boundary",
    "format_report",
    "from_vllm_result",
    "run_boundary",
    "run_kit",
    "schedules",
    "settings_cases",
    "to_vllm",
]
