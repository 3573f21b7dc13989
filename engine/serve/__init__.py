"""Serving: the engine behind an OpenAI-compatible HTTP API (``exitlaw serve``), safe by default."""

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

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


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)


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
