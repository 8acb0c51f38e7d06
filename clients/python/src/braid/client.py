"""The client of braid's HTTP control plane."""

from __future__ import annotations

import http.client
import json
import os
import socket
import secrets
import time
import urllib.parse
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union

from . import __version__
from ._http import _BROKEN, Body, Outage, Transport, _Request, _Retry, env, final
from ._sse import read_events
from .errors import BraidError, BraidTimeoutError, ConnectionLostError, JobFailedError, NotBraidError
from .models import Event, Health, Job, JobSpec, Manifest, Object, Operation, OperationSpec, Token, Worker, decode, param_value, tiles_value

__all__ = ["Client", "DEFAULT_SERVER", "StrPath", "read_config"]

#: The server used when neither ``server=`` nor ``$BRAID_SERVER`` is given.
DEFAULT_SERVER = "http://127.0.0.1:7070"

#: How long one long-poll of :meth:`Client.wait` asks the server to hold on.
WAIT_POLL = 30.0

StrPath = Union[str, "os.PathLike[str]"]
JobRef = Union[str, Job]
#: An object: its id, an :class:`Object`, or a :class:`Job` for the job's result.
ObjectRef = Union[str, Object, Job]

_CHUNK = 1 << 20

T = TypeVar("T")


class Client:
    """Talks to one braid server. Safe for use from several threads.

    ``server`` is the base URL (``http://host:7070``); without one the
    client uses ``$BRAID_SERVER``, else the configuration file's, else
    :data:`DEFAULT_SERVER`. ``token`` is sent as ``Authorization: Bearer
    <token>`` on every request; without one the client uses ``$BRAID_TOKEN``,
    else the configuration file's, and ``token=""`` sends none. ``ca`` is a
    CA certificate file (PEM) to trust for an https server, besides the
    system's (the server's ``DATA/tls/ca.pem``); without one ``$BRAID_CA``,
    else the configuration file's. The configuration file is the CLI's:
    ``$BRAID_CONFIG``, else ``$XDG_CONFIG_HOME/braid/config``, else
    ``~/.config/braid/config``, lines of ``key = value``. ``timeout`` bounds each socket operation in seconds; a
    long-poll adds its own length to it. ``retry_for`` is the longest outage
    a call rides through (a server restarting): calls that are safe to make
    again are made again for that long; 0 turns retrying off.

    Every method raises :class:`braid.BraidError` (a subclass) when the call
    fails; an answer from the server carries its ``status``, ``code`` and
    ``message``.
    """

    def __init__(
        self,
        server: Optional[str] = None,
        *,
        token: Optional[str] = None,
        ca: Optional[StrPath] = None,
        timeout: float = 60.0,
        retry_for: float = 30.0,
    ) -> None:
        cfg = read_config()
        base = server or env("BRAID_SERVER") or cfg.get("server") or DEFAULT_SERVER
        if token is None:
            token = env("BRAID_TOKEN") or cfg.get("token")
        if ca is None:
            ca = env("BRAID_CA") or cfg.get("ca")
        self._timeout = timeout
        self._t = Transport(
            base,
            token=token or None,
            ca=os.fspath(ca) if ca is not None else None,
            timeout=timeout,
            retry_for=retry_for,
            user_agent=f"braid-python/{__version__}",
        )

    @property
    def url(self) -> str:
        """The server's base URL."""
        return self._t.base

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    # --- the server

    def health(self) -> Health:
        """The server's liveness answer and its version (GET /healthz)."""
        return self._decode(Health, self._json("GET", "/healthz"))

    def openapi(self) -> Dict[str, Any]:
        """The server's OpenAPI document (GET /v1/openapi.json)."""
        doc = self._json("GET", "/v1/openapi.json")
        if not isinstance(doc, dict):
            raise NotBraidError(200, "", f"{self.url}: the OpenAPI document is not a JSON object")
        return doc

    # --- objects

    def put(self, data: Union[bytes, bytearray, IO[bytes]]) -> Object:
        """Uploads bytes, or a binary file read from where it stands to its end, as an object.

        The file is not closed. If the server cannot be reached the upload is
        made again (within ``retry_for``) as long as the body can be sent
        again: bytes always, a file if it can seek.
        """
        if isinstance(data, str):
            raise TypeError("put takes bytes or a binary file, not str")
        body: Body = bytes(data) if isinstance(data, bytearray) else data
        return self._decode(Object, self._json("POST", "/v1/objects", body=body, ctype="application/octet-stream"))

    def put_from(self, url: str) -> Object:
        """Stores the object at ``s3://BUCKET/KEY``, which the server reads itself.

        The server reads the bucket object once, with its own S3 endpoint and
        credentials (``braid server --store``/``--s3-endpoint``, AWS_*); no
        byte passes through this client. The object then counts as the
        caller's upload.
        """
        if not url.startswith("s3://"):
            raise ValueError(f"put_from({url!r}): want s3://BUCKET/KEY")
        path = "/v1/objects?from=" + urllib.parse.quote(url, safe="")
        return self._decode(Object, self._json("POST", path))

    def put_file(self, path: StrPath) -> Object:
        """Uploads the file at path."""
        with open(path, "rb") as f:
            return self.put(f)

    def get(self, obj: ObjectRef) -> bytes:
        """Downloads an object whole (again from the start if the connection breaks)."""
        return self._t.call(_Request("GET", _object_path(obj)), lambda resp: resp.read())

    def write_to(self, obj: ObjectRef, w: IO[bytes]) -> int:
        """Streams an object into the binary file w and returns its size.

        While nothing has been written, a broken download is made again;
        once some has, it raises :class:`braid.ConnectionLostError`, since w
        holds part of the object.
        """

        def read(resp: Any) -> int:
            n = 0
            while True:
                try:
                    chunk = resp.read(_CHUNK)
                    if not chunk and resp.length:
                        # http.client ends a body cut short of its
                        # Content-Length quietly; say it broke off.
                        raise http.client.IncompleteRead(b"", resp.length)
                except _BROKEN as e:
                    if n > 0:
                        raise final(self._t.lost(e)) from e
                    raise
                if not chunk:
                    return n
                try:
                    w.write(chunk)
                except OSError as e:
                    raise final(e) from e
                n += len(chunk)

        return self._t.call(_Request("GET", _object_path(obj)), read)

    def download(self, obj: ObjectRef, dest: StrPath) -> Path:
        """Downloads an object, or a job's result, into a file and returns its path.

        A job that has no result (it failed, was cancelled or is not
        finished) raises :class:`braid.JobFailedError` with its error. If
        dest is a directory the file is named after the object id, with
        the extension its bytes call for (.png, .jpg, .gif, .json), as
        ``braid get`` names it. The download goes to a temporary file beside
        the final one, renamed into place once whole, so a failed download
        leaves no partial file.
        """
        oid = _object_id(obj)
        dest = Path(dest)
        into_dir = dest.is_dir()
        f, tmp = _create_temp(dest if into_dir else dest.parent)
        try:
            with f:
                self.write_to(oid, f)
                f.flush()
                os.fsync(f.fileno())
            path = dest / (oid + _extension(tmp)) if into_dir else dest
            try:
                os.chmod(tmp, os.stat(path).st_mode & 0o7777)  # keep an existing file's mode
            except FileNotFoundError:
                pass
            os.replace(tmp, path)
            return path
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise

    def objects(self, page_size: Optional[int] = None) -> List[Object]:
        """Every stored object, by id; the server sends long lists in pages (of page_size, if given), which this follows."""
        return [self._decode(Object, o) for o in self._list("GET", _paged("/v1/objects", page_size))]

    def delete_object(self, obj: ObjectRef) -> None:
        """Deletes an object: :class:`braid.NotFoundError` (object_not_found) if there is none, :class:`braid.ConflictError` while a job that is not finished uses it."""
        self._json("DELETE", _object_path(obj))

    # --- operations

    def operations(self) -> List[Operation]:
        """The operations catalogue: the built-in operations, then the user operations, each sorted by name."""
        return [self._decode(Operation, o) for o in self._list("GET", "/v1/operations")]

    def add_operation(self, spec: OperationSpec) -> Operation:
        """Registers a user operation whose module is stored (see :meth:`put`); returns its catalogue entry.

        Registering a name again makes a new version unless nothing changed.
        A module that would not run raises :class:`braid.BraidError` with
        code ``bad_module`` and the reason.
        """
        body = json.dumps(spec.to_json()).encode()
        return self._decode(Operation, self._json("POST", "/v1/operations", body=body, ctype="application/json"))

    def remove_operation(self, name: str) -> None:
        """Removes a user operation: no new job can name it; jobs running it finish."""
        self._json("DELETE", f"/v1/operations/{urllib.parse.quote(name, safe='')}")

    # --- jobs

    def submit(
        self,
        op: str,
        input: Union[ObjectRef, Sequence[ObjectRef]],
        *,
        params: Optional[Mapping[str, object]] = None,
        repeat: Optional[int] = None,
        tiles: Union[str, Tuple[int, int], None] = None,
        policy: Optional[str] = None,
        speculate: Optional[bool] = None,
    ) -> Job:
        """Submits a job: op on the input object, or one unit per object of a list of them (at most 1000; the result is a :class:`braid.Manifest`).

        Parameter values are strings, numbers or bools, sent in braid's form
        (``sigma=2`` as "2", ``lower=True`` as "true"). ``tiles`` is "RxC" or
        a pair ``(R, C)``. See :class:`braid.JobSpec` for repeat, tiles,
        policy and speculate.
        """
        spec = JobSpec(
            op=op,
            params={k: param_value(k, v) for k, v in (params or {}).items()},
            repeat=repeat,
            tiles=None if tiles is None else tiles_value(tiles),
            policy=policy,
            speculate=speculate,
        )
        if isinstance(input, (str, Object)):
            spec.input = _object_id(input)
        else:
            spec.inputs = [_object_id(i) for i in input]
        return self.submit_spec(spec)

    def submit_spec(self, spec: JobSpec) -> Job:
        """Submits a job and returns its first status."""
        body = json.dumps(spec.to_json()).encode()
        return self._decode(Job, self._json("POST", "/v1/jobs", body=body, ctype="application/json"))

    def job(self, job: JobRef, units: bool = False) -> Job:
        """A job's status; units adds per-unit statistics, every unit's (the server sends them a page at a time)."""
        path: Optional[str] = f"{_job_path(job)}?units={int(units)}"
        first: Optional[Job] = None
        while path is not None:
            raw, following = self._t.json_page(_Request("GET", path))
            page = self._decode(Job, raw)
            if first is None:
                first = page
            else:
                first.units.extend(page.units)
            path = following if units else None
        assert first is not None
        return first

    def jobs(self, page_size: Optional[int] = None) -> List[Job]:
        """Every job the server knows, oldest first, without per-unit statistics nor units_per_worker (:meth:`job` has them); the server sends long lists in pages (of page_size, if given), which this follows."""
        return [self._decode(Job, j) for j in self._list("GET", _paged("/v1/jobs", page_size))]

    def cancel(self, job: JobRef) -> Job:
        """Cancels a job: :class:`braid.ConflictError` if it is already done, failed or cancelled."""
        return self._decode(Job, self._json("POST", f"{_job_path(job)}/cancel"))

    def delete_job(self, job: JobRef) -> None:
        """Deletes a finished job's record (its objects stay): :class:`braid.ConflictError` while it is not finished."""
        self._json("DELETE", _job_path(job))

    def wait(
        self,
        job: JobRef,
        progress: Optional[Callable[[Job], None]] = None,
        timeout: Optional[float] = None,
    ) -> Job:
        """Blocks until the job is done, failed or cancelled and returns its final status, with per-unit statistics.

        It long-polls the server, never busy-looping. With progress, it first
        follows the job's event stream and calls progress with the job's
        status at once and on every change (at most ten times a second),
        on the calling thread. A server that restarts meanwhile is ridden
        through as :meth:`events` does. With a timeout (seconds) it raises
        :class:`braid.BraidTimeoutError` if the job is not finished by then.
        A failed or cancelled job is returned, not raised: check ``state``.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        job_id = _job_id(job)
        if progress is not None:
            for ev in self._events(job_id, deadline):
                progress(ev.job)
        while True:
            poll = WAIT_POLL
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BraidTimeoutError(0, "", f"job {job_id} is not finished after {timeout:g}s")
                poll = min(poll, left)
            path = f"{_job_path(job_id)}/wait?timeout={max(1, int(poll * 1000))}ms&units=1"
            j = self._decode(Job, self._t.json(_Request("GET", path, timeout=poll + self._timeout), deadline))
            if j.terminal:
                return j

    def events(self, job: JobRef, timeout: Optional[float] = None) -> Iterator[Event]:
        """Follows the job's server-sent event stream (GET /v1/jobs/{id}/events).

        Yields a ``progress`` event at once and on every change, and ends
        after the one ``done`` event, whose job is terminal. If the stream
        breaks off (the server restarted) it reconnects within
        ``retry_for`` and resumes with the job's current state. With a
        timeout (seconds) it raises :class:`braid.BraidTimeoutError` if the
        stream has not ended by then. Closing the iterator early closes
        the connection.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        return self._events(_job_id(job), deadline)

    def _events(self, job_id: str, deadline: Optional[float]) -> Iterator[Event]:
        outage = Outage(self._t.retry_for, deadline)
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise BraidTimeoutError(0, "", f"the event stream of job {job_id} has not ended within the timeout")
            req = _Request("GET", f"{_job_path(job_id)}/events", timeout=left)
            try:
                conn, resp = self._t.open(req, None, outage)
            except _Retry as r:
                outage.failed(r.err)
                continue
            err: BraidError
            try:
                for raw in read_events(resp):
                    ev = self._decode(Event, _loads(raw.data))
                    yield ev
                    if ev.type == "done":
                        return
                err = ConnectionLostError(0, "", f"braid server {self.url}: the event stream ended before job {job_id} was done")
            except _BROKEN as e:
                err = self._t.lost(e)
                err.__cause__ = e
            except ValueError as e:  # a line over the limit, or not UTF-8
                raise NotBraidError(resp.status, "", f"{self.url}: bad event stream of job {job_id}: {e}") from e
            except (socket.timeout, TimeoutError) as e:
                raise BraidTimeoutError(0, "", f"the event stream of job {job_id} has not ended within the timeout") from e
            finally:
                conn.close()
            outage.failed(err)

    def manifest(self, obj: ObjectRef) -> Manifest:
        """Reads a result object that is a :class:`braid.Manifest` (a repeat job's of two or more units)."""
        return self._decode(Manifest, _loads(self.get(obj)))

    def result_ids(self, job: JobRef) -> List[str]:
        """The ids of a done job's output objects, in unit order.

        That is the result itself for a job of one unit or a tiled job, and
        each unit's output of a repeat job's manifest. A job that failed,
        was cancelled or is not finished raises
        :class:`braid.JobFailedError`, its ``code`` the job's state.
        """
        j = job if isinstance(job, Job) and job.terminal else self.job(_job_id(job))
        if j.state != "done" or not j.result:
            why = f": {j.error}" if j.error else ""
            raise JobFailedError(0, j.state, f"job {j.id} is {j.state}{why}")
        if not j.has_manifest:
            return [j.result]
        return [u.output for u in self.manifest(j.result).expand()]

    def download_results(self, job: JobRef, dest_dir: StrPath) -> List[Path]:
        """Downloads a done job's outputs (see :meth:`result_ids`) into dest_dir, made if missing; returns the paths, in unit order."""
        d = Path(dest_dir)
        d.mkdir(parents=True, exist_ok=True)
        paths: Dict[str, Path] = {}  # units of a repeat job often share their output: fetched once
        out = []
        for oid in self.result_ids(job):
            if oid not in paths:
                paths[oid] = self.download(oid, d)
            out.append(paths[oid])
        return out

    # --- workers

    def workers(self, page_size: Optional[int] = None) -> List[Worker]:
        """The registered workers, sorted by name."""
        return [self._decode(Worker, w) for w in self._list("GET", _paged("/v1/workers", page_size))]

    # --- tokens (an admin's calls)

    def create_token(self, role: str, name: Optional[str] = None, expires_in: Optional[str] = None) -> Token:
        """Makes a token with ``role`` read, submit or admin, expiring after ``expires_in`` (``"36h"``, ``"30d"``; None: never).

        The answer's ``token`` is the secret: the server keeps only a hash of it.
        """
        body: Dict[str, Any] = {"role": role}
        if name is not None:
            body["name"] = name
        if expires_in is not None:
            body["expires_in"] = expires_in
        return self._decode(Token, self._json("POST", "/v1/tokens", json.dumps(body).encode(), "application/json"))

    def tokens(self) -> List[Token]:
        """The server's tokens, oldest first, without their secrets."""
        return [self._decode(Token, t) for t in self._list("GET", "/v1/tokens")]

    def revoke_token(self, token: Union[str, Token]) -> None:
        """Revokes a token by id: :class:`braid.ConflictError` for the last admin token that works."""
        tid = token.id if isinstance(token, Token) else token
        self._json("DELETE", "/v1/tokens/" + urllib.parse.quote(tid, safe=""))

    # --- helpers

    def _json(self, method: str, path: str, body: Optional[Body] = None, ctype: Optional[str] = None) -> Any:
        return self._t.json(_Request(method, path, body=body, ctype=ctype))

    def _decode(self, cls: Type[T], value: Any) -> T:
        """decode, raising NotBraidError for an answer that is not what the OpenAPI document says."""
        try:
            return decode(cls, value)
        except ValueError as e:
            raise NotBraidError(200, "", f"{self.url}: unexpected answer: {e}") from e

    def _list(self, method: str, path: str) -> List[Any]:
        """A list, every page of it: the server pages long lists and says in a Link header where the next page is."""
        out: List[Any] = []
        next_path: Optional[str] = path
        while next_path is not None:
            page, following = self._t.json_page(_Request(method, next_path))
            if not isinstance(page, list):
                raise NotBraidError(200, "", f"{self.url}{next_path}: want a JSON array, got {type(page).__name__}")
            out.extend(page)
            if following is not None and not following.startswith("/"):
                raise NotBraidError(200, "", f"{self.url}{next_path}: next page {following!r} is not a path on this server")
            next_path = following
        return out


def _loads(raw: Union[str, bytes]) -> Any:
    try:
        return json.loads(raw)
    except ValueError as e:
        raise NotBraidError(200, "", f"not JSON: {e}") from e


def _paged(path: str, page_size: Optional[int]) -> str:
    return path if page_size is None else f"{path}?limit={int(page_size)}"


def _object_id(obj: ObjectRef) -> str:
    """The id of an object, or of a job's result: a job without one raises :class:`braid.JobFailedError`."""
    if isinstance(obj, Object):
        return obj.id
    if isinstance(obj, Job):
        if obj.result:
            return obj.result
        why = f": {obj.error}" if obj.error else ""
        raise JobFailedError(0, obj.state, f"job {obj.id} is {obj.state}{why}; it has no result")
    if not isinstance(obj, str) or not obj:
        raise BraidError(0, "", f"no object to fetch ({obj!r}): a job that failed or is not finished has no result "
                         "(its state and error say why; pass the job itself to be told)")
    return obj


def _job_id(job: JobRef) -> str:
    return job.id if isinstance(job, Job) else job


def _object_path(obj: ObjectRef) -> str:
    return "/v1/objects/" + urllib.parse.quote(_object_id(obj), safe="")


def _job_path(job: JobRef) -> str:
    return "/v1/jobs/" + urllib.parse.quote(_job_id(job), safe="")


def _extension(path: str) -> str:
    """The extension for the image or JSON in the file at path."""
    with open(path, "rb") as f:
        head = f.read(16)
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return ".png"
    if head.startswith(b"\xff\xd8\xff"):
        return ".jpg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return ".gif"
    if head.startswith(b"{"):
        return ".json"
    return ""


def _create_temp(directory: Path) -> Tuple[IO[bytes], str]:
    """Creates a new file in directory, mode 0666 less the umask (mkstemp's are 0600)."""
    while True:
        name = os.path.join(directory, ".braid-get-" + secrets.token_hex(8))
        try:
            fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        return os.fdopen(fd, "wb"), name


_CONFIG_KEYS = ("server", "token", "ca", "ca-fingerprint")


def read_config() -> Dict[str, str]:
    """The CLI's configuration file as a dict (empty if there is none).

    It is ``$BRAID_CONFIG``, else ``$XDG_CONFIG_HOME/braid/config``, else
    ``~/.config/braid/config``: lines of ``key = value`` (keys server, token,
    ca, ca-fingerprint), ``#`` for comments. A file that ``$BRAID_CONFIG``
    names must exist; a line that is not ``key = value`` with a known key
    is a ValueError naming the line. ``ca-fingerprint`` is the CLI's; this
    client cannot pin a fingerprint and says so if the file gives one
    without ``ca``.
    """
    named = env("BRAID_CONFIG")
    if named:
        path = Path(named)
    elif env("XDG_CONFIG_HOME"):
        path = Path(env("XDG_CONFIG_HOME") or "") / "braid" / "config"
    else:
        path = Path.home() / ".config" / "braid" / "config"
    try:
        text = path.read_text()
    except FileNotFoundError:
        if named:
            raise
        return {}
    out: Dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not value:
            raise ValueError(f"configuration file {path}: line {n}: want key = value")
        if key not in _CONFIG_KEYS:
            raise ValueError(f"configuration file {path}: line {n}: unknown key {key!r} (known: {', '.join(_CONFIG_KEYS)})")
        out[key] = value
    if "ca-fingerprint" in out and "ca" not in out:
        raise ValueError(f"configuration file {path}: ca-fingerprint is the CLI's; the Python client trusts a server by ca = FILE")
    return out
