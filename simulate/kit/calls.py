"""Loading and calling a user's verifier for the conformance kit: named errors, a per-call timeout.

``load_verifier`` turns ``MODULE:CALLABLE`` into a callable; anything that goes wrong at import
(``ImportError``, ``SyntaxError``, ``sys.exit``, any exception) is a :class:`VerifierCallError`, the
kit's "bad input". ``_call`` runs one call under an optional ``SIGALRM`` timer (it interrupts Python
code, not a blocking C call; main thread only) and turns what the user's code raises into a
:class:`VerifierCrash` that the kit reports with its case.
"""

from __future__ import annotations

import inspect
import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Callable

import numpy as np

from exitlaw.theory import DraftTree
from exitlaw.theory.infra.callable_spec import CallableSpecError, load_callable


class VerifierCallError(ValueError):
    """The verifier could not be loaded, called, or returned something that is not (node, token)."""


class VerifierCrash(RuntimeError):
    """The verifier raised (or ran past the per-call timeout) inside one case: reported, other cases go on."""


class CallTimeout(Exception):
    """Raised inside a verifier call that ran past ``timeout`` seconds."""


def load_verifier(spec: str) -> Callable:
    """``MODULE:CALLABLE`` -> the callable (:func:`~exitlaw.theory.infra.callable_spec.load_callable`), with its
    error as a :class:`VerifierCallError`.

    Modules are looked up on ``sys.path`` with the current directory in front (as ``python -m``
    does), so ``exitlaw check mymodule:fn`` finds ``./mymodule.py`` from the installed script too.
    """
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return load_callable(spec)
    except CallableSpecError as err:
        raise VerifierCallError(str(err)) from err


def check_signature(fn: Callable, mode: str, settings: bool = False) -> None:
    names = (
        ("tree", "probs", "rng")
        if mode == "conditional"
        else ("tree", "probs", "draft_probs", "rng")
    )
    if settings:  # settings mode: raw logits plus the settings
        names = (
            ("tree", "logits", "settings", "rng")
            if mode == "conditional"
            else ("tree", "logits", "draft_logits", "settings", "rng")
        )
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as err:
        raise VerifierCallError(f"cannot read the signature of {fn!r}: {err}") from err
    try:
        sig.bind(*names)
    except TypeError as err:
        raise VerifierCallError(
            f"{getattr(fn, '__name__', fn)}{sig} cannot be called as f({', '.join(names)}) "
            f"({mode} mode{', settings' if settings else ''}): {err}"
        ) from err


def _as_pair(out, tree: DraftTree, vocab: int) -> tuple[int, int]:
    ok = isinstance(out, (tuple, list, np.ndarray)) and len(out) == 2
    if ok:
        try:
            v, y = (int(x) for x in out)
            ok = all(float(x) == int(x) for x in out)
        except (TypeError, ValueError):
            ok = False
    if not ok:
        raise VerifierCallError(
            f"the verifier returned {out!r}; expected (exit_node, bonus_token), two integers"
        )
    if not 0 <= v < tree.num_nodes:
        raise VerifierCallError(
            f"the verifier returned exit node {v}, outside 0..{tree.num_nodes - 1}"
        )
    if not 0 <= y < vocab:
        raise VerifierCallError(
            f"the verifier returned bonus token {y}, outside vocabulary 0..{vocab - 1}"
        )
    return v, y


@contextmanager
def _call_limit(timeout):
    """Install the SIGALRM handler that turns an expired per-call timer into :class:`CallTimeout`."""
    if (
        timeout is None
        or not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def on_alarm(signum, frame):
        raise CallTimeout()

    old = signal.signal(signal.SIGALRM, on_alarm)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _call(fn, args, tree, vocab, timeout=None, index=0):
    armed = timeout is not None and signal.getsignal(signal.SIGALRM) not in (
        signal.SIG_DFL,
        signal.SIG_IGN,
        None,
    )
    try:
        if armed:
            signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            out = fn(*args)
        finally:
            if armed:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except VerifierCallError:
        raise
    except CallTimeout as err:
        raise VerifierCrash(
            f"call {index} did not return within the timeout of {timeout} s"
        ) from err
    except (
        Exception,
        SystemExit,
    ) as err:  # the user's code failed: reported with its case and traceback
        raise VerifierCrash(f"call {index} raised {type(err).__name__}: {err}") from err
    return _as_pair(out, tree, vocab)


__all__ = ["VerifierCallError", "VerifierCrash", "CallTimeout", "load_verifier", "check_signature"]
