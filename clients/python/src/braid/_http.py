"""One HTTP call to a braid server, made again while the server is away.

The rules are the Go client's (client/retry.go): a call whose connection
could not be made is made again whatever it is, since nothing of it was
sent, and so is one a braid server refused because it is stopping (503 with
code ``unavailable``); a GET whose connection broke, or that a proxy
answered 502, 503 or 504, is made again too. Waits start near 100 ms and
double up to 2 s, with jitter, for as long as ``retry_for`` allows. Any other
error answer is raised at once.
"""

from __future__ import annotations

import http.client
import io
import json
import os
import random
import socket
import ssl
import time
import urllib.parse
from dataclasses import dataclass
from typing import IO, Any, Callable, Dict, Optional, Tuple, TypeVar, Union

from .errors import (
    BraidError,
    BraidTimeoutError,
    ConnectionLostError,
    NoServerError,
    NotBraidError,
    WrongURLError,
    error_for,
)

T = TypeVar("T")

Body = Union[bytes, IO[bytes]]

DEFAULT = -1.0
FIRST_BACKOFF = 0.1
MAX_BACKOFF = 2.0
_ERROR_BODY_LIMIT = 64 << 10
_BLOCK = 1 << 20


class _Final(Exception):
    """Wraps an error that ends a call however transient it looks (a download that wrote part of its output)."""

    def __init__(self, err: BaseException) -> None:
        super().__init__(err)
        self.err = err


def final(err: BaseException) -> _Final:
    return _Final(err)


class _Broken(Exception):
    """The connection broke after the request may have been sent."""

    def __init__(self, err: BaseException) -> None:
        super().__init__(err)
        self.err = err


# The reasons OpenSSL gives when the peer's first bytes are not TLS: a plain HTTP server's answer.
_NOT_TLS = frozenset({"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "UNKNOWN_PROTOCOL"})

_BROKEN = (
    ConnectionResetError,
    ConnectionAbortedError,
    BrokenPipeError,
    http.client.RemoteDisconnected,
    http.client.IncompleteRead,
    http.client.BadStatusLine,
)


@dataclass
class _Request:
    method: str
    path: str
    body: Optional[Body] = None
    ctype: Optional[str] = None
    # The socket timeout in seconds: DEFAULT for the transport's, None for
    # none (an event stream may be silent for as long as a job waits).
    timeout: Optional[float] = DEFAULT

    @property
    def repeatable(self) -> bool:
        return self.method in ("GET", "HEAD")


class _Upload:
    """A request body; a file is sent again from where the call found it if it can seek."""

    def __init__(self, body: Body) -> None:
        self.body = body
        self.start = -1
        self.size = -1
        self.sent = False
        if isinstance(body, (bytes, bytearray, memoryview)):
            self.size = len(body)
            return
        try:
            self.start = body.tell()
            end = body.seek(0, io.SEEK_END)
            body.seek(self.start, io.SEEK_SET)
            self.size = end - self.start
        except (OSError, AttributeError, ValueError):
            self.start = -1

    def replayable(self) -> bool:
        return not self.sent or isinstance(self.body, (bytes, bytearray, memoryview)) or self.start >= 0

    def open(self) -> Tuple[Body, int]:
        if self.sent and not isinstance(self.body, (bytes, bytearray, memoryview)):
            self.body.seek(self.start, io.SEEK_SET)
        self.sent = True
        return self.body, self.size


class Outage:
    """One call's retry state while the server does not answer."""

    def __init__(self, retry_for: float, deadline: Optional[float]) -> None:
        self.retry_for = retry_for
        self.deadline = deadline
        self.since: Optional[float] = None
        self.next = FIRST_BACKOFF

    def answered(self) -> None:
        self.since = None
        self.next = FIRST_BACKOFF

    def failed(self, err: BraidError) -> None:
        """Waits before the next attempt, or raises err (or a timeout) if the call gives up."""
        if self.retry_for <= 0:
            raise err from err.__cause__
        now = time.monotonic()
        if self.since is None:
            self.since = now
        left = self.retry_for - (now - self.since)
        if left <= 0:
            raise err from err.__cause__
        wait = min(self.next / 2 + random.random() * self.next / 2, left)
        if self.deadline is not None:
            if now + wait >= self.deadline:
                raise BraidTimeoutError(0, "", f"timed out while retrying (last error: {err})") from err
        self.next = min(2 * self.next, MAX_BACKOFF)
        time.sleep(wait)


class Transport:
    """Makes calls to one server. Safe for concurrent use: every call has its own connection."""

    def __init__(
        self,
        base: str,
        token: Optional[str],
        ca: Optional[str],
        timeout: float,
        retry_for: float,
        user_agent: str,
    ) -> None:
        if "://" not in base:
            base = "http://" + base
        u = urllib.parse.urlsplit(base.rstrip("/"))
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"not an http(s) URL: {base!r}")
        self.base = base.rstrip("/")
        self.https = u.scheme == "https"
        self.host = u.hostname
        self.port = u.port or (443 if self.https else 80)
        self.prefix = u.path
        self.timeout = timeout
        self.retry_for = retry_for
        self.headers: Dict[str, str] = {"User-Agent": user_agent}
        if token:
            self.headers["Authorization"] = "Bearer " + token
        self.ssl: Optional[ssl.SSLContext] = None
        if self.https or ca:
            self.ssl = ssl.create_default_context(cafile=ca)

    # --- the retry loop

    def call(self, req: _Request, read: Callable[[http.client.HTTPResponse], T], deadline: Optional[float] = None) -> T:
        """Makes req until an attempt succeeds or the retry policy gives up and returns read's value for the 2xx answer."""
        outage = Outage(self.retry_for, deadline)
        upload = _Upload(req.body) if req.body is not None else None
        while True:
            try:
                conn, resp = self.open(req, upload, outage)
                try:
                    return read(resp)
                finally:
                    conn.close()
            except _Final as f:
                raise f.err from None
            except _Retry as r:
                if upload is not None and not upload.replayable():
                    raise r.err from r.err.__cause__
                outage.failed(r.err)
            except BraidError:
                raise
            except _BROKEN as e:  # from read
                err = self.lost(e)
                err.__cause__ = e
                if not req.repeatable:
                    raise err from e
                outage.failed(err)
            except (socket.timeout, TimeoutError) as e:
                raise BraidTimeoutError(0, "", f"braid server {self.base}: no answer within the timeout") from e

    def open(self, req: _Request, upload: Optional["_Upload"], outage: Outage) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Makes one attempt at req and returns its 2xx answer, unread.

        It raises _Retry for a failure the caller may retry (by the rules in
        the module doc) and BraidError for one it may not.
        """
        conn = self.connection(self.timeout if req.timeout == DEFAULT else req.timeout)
        try:
            try:
                conn.connect()
            except ssl.SSLError as e:
                if not isinstance(e, ssl.SSLCertVerificationError) and e.reason in _NOT_TLS:
                    raise self.wrong_url(0, "", "it is an HTTP server", scheme="http") from e
                raise BraidError(0, "", f"braid server {self.base}: TLS: {e}") from e
            except socket.gaierror as e:
                raise NoServerError(0, "", f"no braid server at {self.base} ({e.strerror or e})") from e
            except OSError as e:
                raise _Retry(caused(NoServerError(0, "", f"no braid server at {self.base} ({_reason(e)})"), e)) from e
            try:
                resp = self.send(conn, req, upload)
            except _BROKEN as e:
                lost = caused(self.lost(e), e)
                if req.repeatable:
                    raise _Retry(lost) from e
                raise lost from e
            except (socket.timeout, TimeoutError) as e:
                raise BraidTimeoutError(0, "", f"braid server {self.base}: no answer within the timeout") from e
            if 200 <= resp.status < 300:
                outage.answered()
                return conn, resp
            err = self.status_error(resp)
            if resp.status not in (502, 503, 504):
                outage.answered()
            elif (resp.status == 503 and err.code == "unavailable") or req.repeatable:
                raise _Retry(err)
            raise err
        except BaseException:
            conn.close()
            raise

    def connection(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.ssl, blocksize=_BLOCK)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout, blocksize=_BLOCK)

    def send(self, conn: http.client.HTTPConnection, req: _Request, upload: Optional[_Upload]) -> http.client.HTTPResponse:
        headers = dict(self.headers)
        body: Optional[Body] = None
        chunked = False
        if upload is not None:
            body, size = upload.open()
            if size >= 0:
                headers["Content-Length"] = str(size)
            else:
                chunked = True
        if req.ctype:
            headers["Content-Type"] = req.ctype
        try:
            conn.request(req.method, self.prefix + req.path, body=body, headers=headers, encode_chunked=chunked)
        except (BrokenPipeError, ConnectionResetError):
            # The server may have refused the body before reading it all
            # (an upload over its size limit): its answer says why.
            try:
                return conn.getresponse()
            except Exception:
                pass
            raise
        return conn.getresponse()

    # --- errors

    def status_error(self, resp: http.client.HTTPResponse) -> BraidError:
        """Turns a non-2xx answer into the BraidError for it."""
        raw = resp.read(_ERROR_BODY_LIMIT)
        try:
            doc = json.loads(raw)
            e = doc["error"]
            code, message = e["code"], e["message"]
            if not isinstance(code, str) or not isinstance(message, str) or not code:
                raise ValueError
        except (ValueError, KeyError, TypeError):
            text = raw.decode("utf-8", "replace").strip()
            if resp.status == 400 and "HTTP request to an HTTPS server" in text:
                return self.wrong_url(400, "", "it is an HTTPS server", scheme="https")
            if self.no_endpoint(resp.status, ""):
                return self.wrong_url(resp.status, "", f"the API is not under {self.prefix}", path="")
            plain = resp.getheader("Content-Type", "").startswith("text/plain") and len(text) <= 100 and "\n" not in text
            what = f" ({text})" if plain and text else ""
            return NotBraidError(resp.status, "", f"{self.base} answered {resp.status} {resp.reason}{what}; is it a braid server?")
        # Say the code once: the server's message may start with it too.
        if message.startswith(code + ": "):
            message = message[len(code) + 2 :]
        if self.no_endpoint(resp.status, code, message):
            return self.wrong_url(resp.status, code, f"the API is not under {self.prefix}", path="")
        return error_for(resp.status, code, message)

    def no_endpoint(self, status: int, code: str, message: str = "") -> bool:
        """Whether an answer says the request's path is no endpoint, under a base URL with a path.

        A braid 404 of a job or object that does not exist is not such an
        answer: the path may be a proxy's prefix.
        """
        if self.prefix in ("", "/") or status not in (404, 405):
            return False
        return code in ("", "method_not_allowed") or (code == "not_found" and message.startswith("no such endpoint"))

    def wrong_url(self, status: int, code: str, reason: str, scheme: Optional[str] = None, path: Optional[str] = None) -> WrongURLError:
        """The error for a base URL that is not the server's, with the URL to give instead."""
        u = urllib.parse.urlsplit(self.base)
        base = urllib.parse.urlunsplit((scheme or u.scheme, u.netloc, u.path if path is None else path, "", ""))
        return WrongURLError(status, code, self.base, reason, base)

    def lost(self, e: BaseException) -> ConnectionLostError:
        return ConnectionLostError(0, "", f"braid server {self.base}: connection lost ({_reason(e)})")

    def not_json(self, resp: http.client.HTTPResponse) -> NotBraidError:
        ct = resp.getheader("Content-Type", "")
        return NotBraidError(resp.status, "", f"{self.base} answered {resp.status} with {ct or 'no Content-Type'}, not braid's JSON")

    # --- helpers for JSON calls

    def json(self, req: _Request, deadline: Optional[float] = None) -> Any:
        """Makes a call and returns its decoded JSON answer (None for an empty one)."""

        def read(resp: http.client.HTTPResponse) -> Any:
            raw = resp.read()
            if not raw:
                return None
            try:
                return json.loads(raw)
            except ValueError:
                raise final(self.not_json(resp)) from None

        return self.call(req, read, deadline)

    def json_page(self, req: _Request, deadline: Optional[float] = None) -> Tuple[Any, Optional[str]]:
        """Makes a call to a paged list and returns its decoded JSON answer and the path of the next page, from its Link header (None on the last)."""

        def read(resp: http.client.HTTPResponse) -> Tuple[Any, Optional[str]]:
            raw = resp.read()
            try:
                value = json.loads(raw) if raw else None
            except ValueError:
                raise final(self.not_json(resp)) from None
            return value, _next_link(resp.getheader("Link", ""))

        return self.call(req, read, deadline)


def _next_link(header: str) -> Optional[str]:
    """The target of a Link header's rel="next", as braid's paged lists give it; None if there is none."""
    for part in header.split(","):
        target, _, params = part.strip().partition(";")
        if target.startswith("<") and target.endswith(">") and 'rel="next"' in params.replace(" ", ""):
            return target[1:-1]
    return None


class _Retry(Exception):
    """An attempt's failure that the call may make again."""

    def __init__(self, err: BraidError) -> None:
        super().__init__(err)
        self.err = err


E = TypeVar("E", bound=BaseException)


def caused(err: E, cause: BaseException) -> E:
    """err, with cause as its __cause__ (for the traceback of an error raised after retrying)."""
    err.__cause__ = cause
    return err


def _reason(e: BaseException) -> str:
    """A few words on why a connection failed: "connection refused"."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror.lower()
    if isinstance(e, http.client.RemoteDisconnected):
        return "closed by the server"
    if isinstance(e, http.client.IncompleteRead):
        return f"answer cut off {e.expected} bytes short" if e.expected else "answer cut off"
    return str(e) or type(e).__name__


def env(name: str) -> Optional[str]:
    """The environment variable's value, or None if it is unset or empty."""
    v = os.environ.get(name, "").strip()
    return v or None
