"""The mechanism test's fixed design (:mod:`.mechanism`): its step directions, its drafters, the temperatures
at which coverage is judged, the exit step's contrasts, and the files a run writes (read back by
:mod:`.mechanism_report`)."""

DIRECTIONS = ("ce", "prefix", "exit", "random")
DRAFTERS = ("base", "token")
TEMPERATURES = (0.0, 1.0)
CONTRASTS = (("exit", "prefix"), ("exit", "ce"), ("exit", "random"))
SCHEMA = "exitlaw.mechanism/1"
JSON_NAME, MD_NAME = "mechanism.json", "mechanism.md"  # written by run_mechanism into --out

__all__ = ["CONTRASTS", "DIRECTIONS", "DRAFTERS", "JSON_NAME", "MD_NAME", "SCHEMA", "TEMPERATURES"]
