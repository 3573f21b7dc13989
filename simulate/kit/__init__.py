"""The conformance kit: test cases, calibrated checks, calls into a user's verifier, boundary coins, verifier formats (fixed-tree and chain), settings mode and the report.

Public names load their module on first access.
"""

from exitlaw.theory.module_faces import lazy_exports

_EXPORTS = {
    "BoundaryGenerator": "boundary", "BoundaryReport": "boundary", "boundary_values": "boundary",
    "run_boundary": "boundary", "format_boundary": "boundary", "F64_BELOW_ONE": "boundary",
    "F32_BELOW_ONE": "boundary",
    "VerifierCallError": "calls", "VerifierCrash": "calls", "CallTimeout": "calls", "load_verifier": "calls",
    "check_signature": "calls",
    "HashedTarget": "cases", "Case": "cases", "MarginalCase": "cases", "conditional_cases": "cases",
    "marginal_cases": "cases",
    "MIN_EXPECTED": "checks", "CheckResult": "checks", "zero_cell_result": "checks", "dist_check": "checks",
    "extend_counts": "checks", "big_sequences": "checks", "auto_samples": "checks",
    "completed_check": "checks", "case_block_law": "checks", "check_case": "checks",
    "run_kit": "conformance", "check_verifier": "conformance", "PRECEDENCE": "conformance",
    "VERIFIER_FAILED": "conformance", "INSUFFICIENT": "conformance", "BAD_INPUT": "conformance",
    "KitReport": "conformance", "CHECKS": "conformance", "EXIT_CODES": "conformance",
    "MARGINALLY_EXACT": "conformance",
    "FORMATS": "formats", "ARGUMENTS": "formats", "PAD": "formats", "VerifierFormatError": "formats",
    "adapt_verifier": "formats", "to_eagle": "formats", "from_eagle": "formats", "eagle_probs": "formats",
    "from_eagle_result": "formats", "to_sglang": "formats", "from_sglang": "formats",
    "from_sglang_result": "formats", "to_ddtree": "formats", "from_ddtree": "formats",
    "from_ddtree_result": "formats",
    "format_report": "report", "boundary_marginal_cases": "cases", "schedules": "boundary",
    "CHAIN_FORMATS": "chain_formats", "PLACEHOLDER": "chain_formats", "ChainFormatError": "chain_formats",
    "to_vllm": "chain_formats", "from_vllm_result": "chain_formats", "adapt_chain_verifier": "chain_formats",
    "check_chain_format": "chain_formats",
    "DEFAULT_PANEL": "settings_cases", "SettingsCase": "settings_cases", "settings_cases": "settings_cases",
    "HashedLogits": "settings_cases", "ProcessedTarget": "settings_cases",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
