"""Error types for malformed trees and distributions.

Both derive from :class:`ValueError` so callers that only know the standard
library can still catch them. Messages always name the offending node or row.
"""

from __future__ import annotations


class TreeError(ValueError):
    """A draft tree violates the contract of docs/design.md §1.1.

    Raised for: parent out of range or not before its child, cycles, a second
    root, duplicate sibling tokens, negative tokens, length mismatches.
    """


class DistributionError(ValueError):
    """A probability table, edge probability or temperature is invalid.

    Raised for: wrong shapes, NaN/inf/negative entries, rows that do not sum
    to one within the stated tolerance, out-of-vocabulary tokens, child mass
    above one, temperature <= 0 where sampling needs a positive one.
    """
