"""exitlaw.figures (see docs/architecture.md §1): one module per figure, data in, PNG + PDF out.

``exitlaw figures [--out DIR] [--only NAME] [--overwrite]`` regenerates them all.
"""

from .registry import FIGURES, figure_module, make

__all__ = ["FIGURES", "figure_module", "make"]
