"""``MODULE:CALLABLE`` -> the callable it names: how ``exitlaw check``, ``prove`` and ``serve --verifier``
load a user's verifier.

Standard library only (no numpy, no JAX), so the torch engine may use it. ``CALLABLE`` may be dotted
(``module:Class.method``). Anything that goes wrong is a :class:`CallableSpecError` saying what:
a spec without both parts, a module that fails to import (``ImportError``, ``SyntaxError``,
``sys.exit`` or any exception raised at import), a missing attribute, an attribute that is not callable.
Callers add their own context (a flag name, an error class of their own) around the message.
"""

from __future__ import annotations

from importlib import import_module
from typing import Callable


class CallableSpecError(ValueError):
    """A ``MODULE:CALLABLE`` spec is malformed or does not name an importable callable."""


def _import_user_module(module_name: str):
    try:
        return import_module(module_name)
    except ImportError as err:
        raise CallableSpecError(f"cannot import module {module_name!r}: {err}") from err
    except SyntaxError as err:
        raise CallableSpecError(
            f"cannot import module {module_name!r}: syntax error: {err}"
        ) from err
    except (
        SystemExit
    ) as err:  # user code calling sys.exit at import must not decide the caller's exit status
        raise CallableSpecError(
            f"cannot import module {module_name!r}: it called sys.exit({err.code!r}) at import"
        ) from err
    except (
        Exception
    ) as err:  # any other failure of the user's module at import: named with its type
        raise CallableSpecError(
            f"cannot import module {module_name!r}: {type(err).__name__} at import: {err}"
        ) from err


def load_callable(spec: str) -> Callable:
    """Import ``MODULE`` (from ``sys.path`` as it stands) and return its attribute ``CALLABLE``."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CallableSpecError(f"expected MODULE:CALLABLE, got {spec!r}")
    obj = _import_user_module(module_name)
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise CallableSpecError(f"module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise CallableSpecError(f"{spec} is a {type(obj).__name__}, not a callable")
    return obj


__all__ = ["CallableSpecError", "load_callable"]
