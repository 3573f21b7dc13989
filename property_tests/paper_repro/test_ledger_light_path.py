"""`exitlaw ledger --from-shipped` loads none of paper_repro's torch modules (docs/architecture.md §1).

The ledger reads the mini pipeline's configuration, cells and statistics and the ExitTrain studies'
designs and reports; the modules that train and evaluate (torch, transformers, tokenizers) and the
figures (matplotlib) stay unloaded, so the shipped ledger needs none of those extras.
"""

from __future__ import annotations

import subprocess
import sys

# paper_repro's modules whose job needs torch, transformers or tokenizers, or matplotlib
HEAVY = (
    "exitlaw.paper_repro.figure_inputs",
    "exitlaw.paper_repro.reproduce",
    "exitlaw.paper_repro.mini.corpus",
    "exitlaw.paper_repro.mini.coverage_ceiling",
    "exitlaw.paper_repro.mini.evaluate",
    "exitlaw.paper_repro.mini.pair",
    "exitlaw.paper_repro.mini.pipeline",
    "exitlaw.paper_repro.mini.table",
    "exitlaw.paper_repro.mini.target",
    "exitlaw.paper_repro.mini.exittrain.authors_regime_run",
    "exitlaw.paper_repro.mini.exittrain.mechanism",
    "exitlaw.paper_repro.mini.exittrain.paper_regime_run",
    "exitlaw.paper_repro.mini.exittrain.pilot",
    "matplotlib",
    "tokenizers",
)

CODE = """
import sys, tempfile
from exitlaw.paper_repro.ledger_inputs import ledger_from_shipped
ledger_from_shipped(tempfile.mkdtemp())
loaded = [m for m in {heavy!r} if m in sys.modules]
print(loaded); sys.exit(1 if loaded else 0)
"""


def test_the_shipped_ledger_loads_no_training_evaluation_or_figure_module():
    proc = subprocess.run(
        [sys.executable, "-c", CODE.format(heavy=HEAVY)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_check_sees_a_heavy_module_the_ledger_would_load():
    planted = CODE.replace(
        "import sys, tempfile", "import sys, tempfile, exitlaw.paper_repro.mini.pipeline"
    )
    proc = subprocess.run(
        [sys.executable, "-c", planted.format(heavy=HEAVY)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1 and "exitlaw.paper_repro.mini.pipeline" in proc.stdout
