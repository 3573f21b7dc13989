"""The claims ledger: one row per claim of the paper, each decided by a rule declared before the data.

:data:`CLAIMS` is the claim table (:mod:`.claims`). Every :class:`Claim` declares, before any
input is read, its :class:`~exitlaw.paper_repro.verdicts.Rule` (kind, the
paper's side and effect, the equivalence margin, the scales at which its
decisive setting exists), its primary estimand in words and the names of the
inputs it reads. Its ``measure`` function turns those inputs into ONE interval
(or one calibrated test outcome); :mod:`exitlaw.paper_repro.verdicts` turns the
interval into ``reproduced`` / ``contradicted`` / ``inconclusive`` (rules
R0-R5 stated there). The paper's numbers (Hu et al., arXiv:2610.11750) are
quoted as data; nothing here holds exitlaw's numbers.

Inputs (``inputs[name]``; how they are gathered and hashed: :mod:`exitlaw.paper_repro.ledger_inputs`):
``verifier_equivalence``, ``budget_sweep``, ``sampled_exactness`` (figure data),
``verifier_latency`` (``exitlaw bench verifiers --json``), ``mini`` (a shallow
``exitlaw repro mini`` results.json), ``checks`` (conformance-kit reports by
verifier), and the paired-effect files ``sim_exittrain_sweep`` (a list of
files), ``mini_deep`` (one file) and ``mini_deep_budgets`` (the deep run re-run with
evaluation at B = 32/64/128: the budget-robustness claim's only input), read by
:func:`exitlaw.paper_repro.paired_effects.paired_interval`.

One module per concept: the data types (:mod:`.claim_types`); the measures of each claim family
(:mod:`.exactness`, :mod:`.stage_latency`, :mod:`.conformance`, :mod:`.paired`, and the ExitTrain rows under
their unit policy, :mod:`.exittrain_units`, :mod:`.exittrain_paper`, :mod:`.exittrain_sweep`,
:mod:`.exittrain_authors`); the table (:mod:`.claims`); building the rows (:mod:`.rows`) and writing them
(:mod:`.write`).
"""

from exitlaw.paper_repro.verdicts import CONTRADICTED, INCONCLUSIVE, REPRODUCED, VERDICTS

from . import (
    claim_types,
    claims,
    conformance,
    exactness,
    exittrain_authors,
    exittrain_paper,
    exittrain_sweep,
    exittrain_units,
    rows,
    stage_latency,
    write,
)
from .claim_types import *
from .claims import *
from .conformance import *
from .exactness import *
from .exittrain_authors import *
from .exittrain_paper import *
from .exittrain_sweep import *
from .exittrain_units import *
from .rows import *
from .stage_latency import *
from .write import *

__all__ = [
    *claim_types.__all__,
    *claims.__all__,
    *conformance.__all__,
    *exactness.__all__,
    *exittrain_authors.__all__,
    *exittrain_paper.__all__,
    *exittrain_sweep.__all__,
    *exittrain_units.__all__,
    *rows.__all__,
    *stage_latency.__all__,
    *write.__all__,
    "CONTRADICTED",
    "INCONCLUSIVE",
    "REPRODUCED",
    "VERDICTS",
]
