"""The engine's tree verifiers, one module per verifier holding its single-tree and batched forms side
by side, each registered where it is defined (:mod:`.table`); the shared pieces (random streams,
inverse-CDF draws, the result and its transfer, following proposals) in their own modules.

Every verifier here is a *conditionally exact, saturating* path verifier (docs/design.md §1.6,
"Verifiers on a fixed tree"): given the realised tree and the target rows
``p_v = softmax(logits[v] / T)`` its (exit, bonus) law is the block law
``P(v) p_v(y) [y not a child token of v]``; per row, a batched form has the law of its single-tree
twin. Row ``b`` of batched ``logits [B, N, V]`` is the target's tree forward for
:class:`~exitlaw.engine.decode.batch_tree.BatchTree` row ``b``; padding slots are ignored.
:func:`~exitlaw.engine.decode.dispatch.verify` and
:func:`~exitlaw.engine.decode.dispatch.verify_batch` are the only dispatchers.
"""

from exitlaw.theory.infra import registration as _registration

from . import generators, greedy, predraw, residual, result, table, tev
from .generators import *
from .greedy import *
from .predraw import *
from .residual import *
from .result import *
from .table import *
from .tev import *

# a module added to this folder registers itself when the package loads: no line here names it
_registration.import_every_module(__name__, __path__)  # noqa: F405 (a package's own __path__)

# the engine's verifiers as its modules registered them on loading (engine_names() is the live query)
KINDS = table.engine_names()

__all__ = [
    *generators.__all__,
    *greedy.__all__,
    *predraw.__all__,
    *residual.__all__,
    *result.__all__,
    *table.__all__,
    *tev.__all__,
    "KINDS",
]
