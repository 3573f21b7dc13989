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

from .generators import *
from .greedy import *
from .predraw import *
from .residual import *
from .result import *
from .table import *
from .tev import *
from . import generators, greedy, predraw, residual, result, table, tev

__all__ = [
    *generators.__all__,
    *greedy.__all__,
    *predraw.__all__,
    *residual.__all__,
    *result.__all__,
    *table.__all__,
    *tev.__all__,
]
