"""exitlaw.figures (see DESIGN.md section 2): one module per figure, data in, PNG + PDF out.

``exitlaw figures [--out DIR] [--only NAME] [--overwrite]`` regenerates them all.
"""

from .registry import FIGURES, figure_module, make

__all__ = ["FIGURES", "figure_module", "make"]
