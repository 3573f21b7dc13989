"""Serving: the engine behind an OpenAI-compatible HTTP API (``exitlaw serve``), safe by default.

Public names load their module on first access (Starlette and uvicorn load only when serving).
"""

from exitlaw.theory.module_faces import lazy_exports

_EXPORTS = {
    "APIError": "errors",
    "ServeLimits": "limits",
    "check_request_size": "limits",
    "check_request_work": "limits",
    "DecodeRequest": "requests",
    "parse_request": "requests",
    "UserVerifierError": "user_verifier",
    "load_user_verifier": "user_verifier",
    "user_decide": "user_verifier",
    "ServeConfig": "engine",
    "ServeEngine": "engine",
    "Choice": "engine",
    "ServeApp": "app",
    "serve": "server",
    "bind": "server",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
