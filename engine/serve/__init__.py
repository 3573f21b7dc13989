"""Serving: the engine behind an OpenAI-compatible HTTP API (``exitlaw serve``), safe by default."""

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

from . import engine
from .engine import *
from .errors import APIError
from .limits import ServeLimits, check_request_size, check_request_work
from .requests import DecodeRequest, parse_request
from .user_verifier import UserVerifierError, load_user_verifier, user_decide

if TYPE_CHECKING:
    from .app import ServeApp
    from .server import bind, serve


# PEP 562: names whose module imports Starlette or uvicorn load on first access (static tools read the block above)
__getattr__, __dir__ = lazy_attributes(__name__, {"app": "ServeApp", "server": "bind, serve"})


__all__ = [
    *engine.__all__,
    "APIError",
    "DecodeRequest",
    "ServeApp",
    "ServeLimits",
    "UserVerifierError",
    "bind",
    "check_request_size",
    "check_request_work",
    "load_user_verifier",
    "parse_request",
    "serve",
    "user_decide",
]
