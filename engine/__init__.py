"""exitlaw.engine (see DESIGN.md section 2)."""

# --- tree builders, device trees and verifiers (issue 5, verifier side)
from .builders import build_chain, build_ddtree
from .device_tree import DeviceTree, to_device_tree
from .verifiers import KINDS as VERIFIER_KINDS, VerifierGenerators, VerifyResult, verify
