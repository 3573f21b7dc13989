"""OpenAI-style errors of ``exitlaw serve``: a status, a message naming what is wrong, and the JSON body.

Every refusal (bad request, missing key, a limit) is an :class:`APIError`; its body is
``{"error": {"message", "type", "param", "code"}}`` as the OpenAI API and vLLM answer, never a
traceback.
"""

from __future__ import annotations

from http import HTTPStatus

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "server_error",
}


class APIError(Exception):
    """A request the server answers with ``status`` and an OpenAI-style error body."""

    def __init__(
        self, status: int, message: str, *, param: str | None = None, code: str | None = None
    ):
        super().__init__(message)
        self.status = int(status)
        self.message = message
        self.param = param
        self.code = code

    def body(self) -> dict:
        kind = _TYPES.get(
            self.status, "invalid_request_error" if self.status < 500 else "server_error"
        )
        return {
            "error": {
                "message": self.message,
                "type": kind,
                "param": self.param,
                "code": self.code or HTTPStatus(self.status).phrase.lower().replace(" ", "_"),
            }
        }


def bad_request(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


__all__ = ["APIError", "bad_request"]
