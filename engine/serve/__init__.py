"""Serving: the engine behind an OpenAI-compatible HTTP API (``exitlaw serve``), safe by default."""

from importlib import import_module
from typing import TYPE_CHECKING

from .engine import Choice, ServeConfig, ServeEngine
from .errors import APIError
from .limits import check_request_size, check_request_work, ServeLimits
from .requests import DecodeRequest, parse_request
from .user_verifier import load_user_verifier, user_decide, UserVerifierError

if TYPE_CHECKING:
    from .app import ServeApp
    from .server import bind, serve


# PEP 562: names whose module imports Starlette or uvicorn load on first access (static tools read the block above)
_LAZY = {"ServeApp": ("app", "ServeApp"), "serve": ("server", "serve"), "bind": ("server", "bind")}


def __getattr__(name: str):
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(import_module(f".{module}", __name__), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "APIError",
    "ServeLimits",
    "check_request_size",
    "check_request_work",
    "DecodeRequest",
    "parse_request",
    "UserVerifierError",
    "load_user_verifier",
    "user_decide",
    "ServeConfig",
    "ServeEngine",
    "Choice",
    "ServeApp",
    "serve",
    "bind",
]
