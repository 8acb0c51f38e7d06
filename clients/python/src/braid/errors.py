"""Errors of the braid client.

Every error the client raises for a failed call is a :class:`BraidError`.
An answer from a braid server carries the server's JSON error body, whose
``code`` is stable (``object_not_found``, ``unknown_operation``,
``bad_parameter``, ...; the OpenAPI document lists them) and whose
``message`` is for people. The subclass follows the HTTP status, so a caller
can catch :class:`NotFoundError` for any 404 or test ``err.code`` for one
kind of 404.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

__all__ = [
    "BraidError",
    "BadRequestError",
    "UnauthorizedError",
    "ForbiddenError",
    "NotFoundError",
    "RequestTimeoutError",
    "ConflictError",
    "TooLargeError",
    "ServerError",
    "UnavailableError",
    "NotBraidError",
    "WrongURLError",
    "NoServerError",
    "ConnectionLostError",
    "BraidTimeoutError",
    "JobFailedError",
    "error_for",
]


class BraidError(Exception):
    """A call that failed.

    ``status`` is the HTTP status of the server's answer (0 when there was
    none), ``code`` the server's stable error code ("" when the server did
    not send one) and ``message`` the explanation.
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(status, code, message)
        self.status = status
        self.code = code
        self.message = message

    def __str__(self) -> str:
        if self.code:
            return f"{self.code}: {self.message}"
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, message={self.message!r})"


class BadRequestError(BraidError):
    """400: malformed_json, bad_request, bad_parameter, unknown_operation, bad_image, too_large (a unit over the transport's limit)."""


class UnauthorizedError(BraidError):
    """401: no valid token for the call."""


class ForbiddenError(BraidError):
    """403: the token's role does not allow the call."""


class NotFoundError(BraidError):
    """404: object_not_found for objects, not_found for jobs and workers."""


class RequestTimeoutError(BraidError):
    """408: the upload stalled and the server gave up on it."""


class ConflictError(BraidError):
    """409: the call clashes with the current state (cancelling a finished job, deleting a running one's object)."""


class TooLargeError(BraidError):
    """413: an upload or a JSON body over the server's limit."""


class ServerError(BraidError):
    """5xx other than 503: a fault of the server (or of a proxy in front of it)."""


class UnavailableError(ServerError):
    """503: the server is shutting down (the client retries these; this is the last one)."""


class NotBraidError(BraidError):
    """An answer without braid's JSON body: another HTTP server or a proxy answered."""


class WrongURLError(BraidError):
    """The URL reaches a server, but not braid's API at its base: https:// to a server that speaks plain HTTP or the other way round, or a path (a page of the dashboard, ``http://host:7070/ui``) the API is not under.

    ``url`` is the URL given and ``base`` the one to give instead, as far as
    can be told; ``status`` and ``code`` are those of the answer, if any.
    """

    def __init__(self, status: int, code: str, url: str, reason: str, base: str) -> None:
        super().__init__(status, code, f"{url} is not the server's base URL: {reason}; give the server's base URL, such as {base}")
        self.url = url
        self.base = base

    def __str__(self) -> str:
        return self.message


class NoServerError(BraidError):
    """No connection could be made to the server, for as long as the retry policy allowed."""


class ConnectionLostError(BraidError):
    """The connection broke before the whole answer arrived, on a call that is not safe to repeat."""


class BraidTimeoutError(BraidError, TimeoutError):
    """The server sent nothing for the client's timeout, or a wait outlasted the timeout the caller gave it."""


class JobFailedError(BraidError):
    """The job did not finish with results (it failed or was cancelled); ``code`` is its state."""


_BY_STATUS: Dict[int, Type[BraidError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    408: RequestTimeoutError,
    409: ConflictError,
    413: TooLargeError,
    503: UnavailableError,
}


def error_for(status: int, code: str, message: str) -> BraidError:
    """The error for a server's answer of ``status`` with the given body."""
    cls: Optional[Type[BraidError]] = _BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else BraidError
    return cls(status, code, message)
