"""The objects of braid's API, as in the server's OpenAPI document.

Each dataclass is one schema of ``components.schemas`` (the schema's name
is the class's, its properties the fields, with the same names). Fields
without a default are the schema's required properties; optional ones
default to ``None`` (or to empty collections). Times are timezone-aware
:class:`datetime.datetime` values in UTC. Properties a newer server adds are
ignored, so an older client keeps working.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import typing
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, List, Optional, Type, TypeVar

__all__ = [
    "Object",
    "Parameter",
    "OpLimits",
    "Operation",
    "OperationSpec",
    "JobSpec",
    "Progress",
    "UnitStat",
    "Job",
    "Manifest",
    "ManifestUnit",
    "Endpoint",
    "WorkerInfo",
    "Worker",
    "Event",
    "Health",
    "TokenSpec",
    "Token",
    "TERMINAL_STATES",
]

#: The job states after which nothing changes.
TERMINAL_STATES = frozenset({"done", "failed", "cancelled"})


@dataclass
class Object:
    """A stored, content-addressed object; ``id`` is the SHA-256 of its bytes in hex."""

    id: str
    size: int
    created: datetime
    existing: bool = False
    #: The id of the token that first uploaded the bytes (a server that checks tokens).
    owner: Optional[str] = None


@dataclass
class Parameter:
    """One parameter of an operation. Values are passed as strings in ``JobSpec.params``.

    ``type`` is float, int, string or (user operations) bool; ``min`` and
    ``max`` bound a number, inclusively.
    """

    name: str
    type: str
    doc: str
    default: Optional[str] = None
    min: Optional[float] = None
    max: Optional[float] = None


@dataclass
class OpLimits:
    """Bounds on one unit of a user operation; ``None`` means the server's default."""

    timeout_ms: Optional[int] = None
    memory_mib: Optional[int] = None
    max_output: Optional[int] = None
    network: Optional[bool] = None  # scripts only: the worker's network, where it allows (--exec-network)


@dataclass
class Operation:
    """One entry of the operations catalogue: ``kind`` is builtin, or wasm or exec for a user operation.

    The other fields describe user operations: ``digest`` is the module's
    object id, ``version`` counts the registrations of the name, ``reach``
    is the halo of a tiled job (``None``: not tileable).
    """

    name: str
    summary: str
    params: List[Parameter]
    tileable: bool
    kind: str
    digest: Optional[str] = None
    version: Optional[int] = None
    abi: Optional[str] = None
    interpreter: Optional[str] = None
    reach: Optional[int] = None
    limits: Optional[OpLimits] = None
    owner: Optional[str] = None
    created: Optional[datetime] = None


@dataclass
class OperationSpec:
    """Registers a user operation: a WebAssembly module already stored as object ``module``."""

    name: str
    module: str
    abi: Optional[str] = None
    #: With ``abi="exec"``: the program that runs the script (python3, sh).
    interpreter: Optional[str] = None
    summary: Optional[str] = None
    params: List[Parameter] = field(default_factory=list)
    reach: Optional[int] = None
    limits: Optional[OpLimits] = None

    def to_json(self) -> Dict[str, Any]:
        """The spec as the server takes it: unset fields left out."""
        out: Dict[str, Any] = {"name": self.name, "module": self.module}
        for name in ("abi", "interpreter", "summary", "reach"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.params:
            out["params"] = [{k: v for k, v in dataclasses.asdict(p).items() if v is not None} for p in self.params]
        if self.limits is not None:
            out["limits"] = {k: v for k, v in dataclasses.asdict(self.limits).items() if v is not None}
        return out


@dataclass
class JobSpec:
    """What a client submits: an operation on one input object.

    At most one of ``repeat`` (run the op that many times on the whole
    input; the result is a :class:`Manifest`) and ``tiles`` ("RxC": cut the
    image into tiles; the result is the stitched image) may be set.
    ``policy`` is one of equal, threads, speed, dynamic (the server's
    default).
    """

    op: str
    #: The object the job works on; or, one unit per object, ``inputs``
    #: (at most 1000) or ``input_list`` (the id of an object listing ids,
    #: one per line). Exactly one is given.
    input: Optional[str] = None
    params: Dict[str, str] = field(default_factory=dict)
    repeat: Optional[int] = None
    #: "RxC"; a pair (R, C) is sent as that.
    tiles: Optional[str] = None
    policy: Optional[str] = None
    speculate: Optional[bool] = None
    #: User operations: the version to run (the server pins the current
    #: one), its module id, and a wall-time limit per unit overriding the
    #: operation's.
    op_version: Optional[int] = None
    op_digest: Optional[str] = None
    unit_timeout_ms: Optional[int] = None
    #: A pipeline's user operations' versions, by name (``op`` "blur,sobel" is a pipeline).
    op_versions: Dict[str, int] = field(default_factory=dict)
    inputs: List[str] = field(default_factory=list)
    #: Names of ``inputs`` for people, one per input ("" for none): the manifest gives each unit its input's.
    input_names: List[str] = field(default_factory=list)
    input_list: Optional[str] = None
    #: Another job's id: one unit per unit of it, on its output, each sent as soon as it exists.
    input_job: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        """The spec as the server takes it: unset fields left out.

        Parameter values go in braid's form (:func:`param_value`: ``True``
        as "true", ``2.5`` as "2.5"), and ``tiles`` may be a pair of rows
        and columns, ``(2, 3)`` for "2x3".
        """
        out: Dict[str, Any] = {"op": self.op}
        if self.params:
            out["params"] = {str(k): param_value(k, v) for k, v in self.params.items()}
        if self.inputs:
            out["inputs"] = list(self.inputs)
        if self.input_names:
            out["input_names"] = list(self.input_names)
        if self.op_versions:
            out["op_versions"] = dict(self.op_versions)
        for name in ("input", "repeat", "tiles", "policy", "speculate", "op_version", "op_digest", "unit_timeout_ms", "input_list", "input_job"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.tiles is not None:
            out["tiles"] = tiles_value(self.tiles)
        return out


def param_value(name: object, value: object) -> str:
    """A parameter value as braid takes it: a string as it is, a bool as "true" or "false", a number in decimal.

    Anything else is a TypeError naming the parameter.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise TypeError(f"parameter {name}: want a string, a number or a bool, not {type(value).__name__}")


def tiles_value(tiles: object) -> str:
    """JobSpec.tiles as braid takes it: "RxC", given as that or as a pair (R, C)."""
    if isinstance(tiles, str):
        return tiles
    if isinstance(tiles, (tuple, list)) and len(tiles) == 2 and all(isinstance(n, int) and not isinstance(n, bool) for n in tiles):
        return f"{tiles[0]}x{tiles[1]}"
    raise TypeError(f"tiles: want \"RxC\" or a pair of ints (rows, columns), not {tiles!r}")


@dataclass
class Progress:
    """Counts of a job's units."""

    total: int
    done: int
    running: int
    sent: int
    failed: int
    pending: int
    cancelled: int


@dataclass
class UnitStat:
    """One unit's statistics."""

    index: int
    state: str
    stream: int
    attempts: int
    queued_ms: float
    compute_ms: float
    worker: Optional[str] = None
    sent: Optional[datetime] = None
    returned: Optional[datetime] = None
    output: Optional[str] = None
    error: Optional[str] = None


@dataclass
class Job:
    """A job's status. ``state`` is queued, running, done, failed or cancelled."""

    id: str
    spec: JobSpec
    state: str
    progress: Progress
    received_at: datetime
    waiting: Optional[str] = None
    error: Optional[str] = None
    result: Optional[str] = None
    #: The id of the token that submitted the job (a server that checks tokens).
    owner: Optional[str] = None
    finished_at: Optional[datetime] = None
    makespan_ms: Optional[float] = None
    avg_unit_ms: Optional[float] = None
    units_per_worker: Dict[str, int] = field(default_factory=dict)
    units: List[UnitStat] = field(default_factory=list)

    @property
    def terminal(self) -> bool:
        """Whether the job is done, failed or cancelled."""
        return self.state in TERMINAL_STATES

    @property
    def has_manifest(self) -> bool:
        """Whether the result is a :class:`Manifest`: a repeat job's of two or more units, or a job's of many inputs."""
        spec = self.spec
        return (spec.repeat or 0) > 1 or bool(spec.inputs) or spec.input_list is not None or spec.input_job is not None


@dataclass
class ManifestUnit:
    """One unit's output object, and in a job of many inputs its input; in a repeat job, ``count`` consecutive units from ``index`` with the same output share an entry (0: one unit)."""

    index: int
    output: str
    size: int
    input: Optional[str] = None
    #: The input's name, from the job's ``input_names``.
    name: Optional[str] = None
    count: int = 0

    @property
    def units(self) -> int:
        """How many units the entry stands for."""
        return max(self.count, 1)


@dataclass
class Manifest:
    """The result object of a repeat job of two or more units, or of a job of many inputs (``input`` is then ``None``)."""

    job: str
    op: str
    units: List[ManifestUnit]
    input: Optional[str] = None

    def expand(self) -> List[ManifestUnit]:
        """The entries one per unit, in unit order: an entry of ``count`` units becomes that many of one."""
        out = []
        for u in sorted(self.units, key=lambda e: e.index):
            for k in range(u.units):
                out.append(ManifestUnit(index=u.index + k, output=u.output, size=u.size, input=u.input))
        return out


@dataclass
class Endpoint:
    """A data-plane address and the transport that serves it; ``routes`` are the worker's other hosts, one per further network path."""

    transport: str
    addr: str
    routes: List[str] = field(default_factory=list)


@dataclass
class WorkerInfo:
    """What a worker tells servers about itself."""

    name: str
    max_threads: int
    ops: List[str]
    endpoints: List[Endpoint]
    cores: int = 0
    clock_mhz: int = 0
    ram_bytes: int = 0
    disk_free_bytes: int = 0
    free_threads: int = 0
    leased_threads: Optional[int] = None
    info_url: Optional[str] = None
    epoch: Optional[int] = None
    version: Optional[str] = None
    #: The kinds of user operation the worker runs ("wasm").
    runtimes: List[str] = field(default_factory=list)
    #: Bytes of unit inputs the worker can hold at once; servers keep no more in flight there.
    hold_bytes: Optional[int] = None


@dataclass
class Worker:
    """A registered worker as the server sees it; ``state`` is connecting, up or down."""

    info: WorkerInfo
    state: str
    streams: int
    units_done: int
    registered_at: datetime
    last_seen: datetime
    transport: Optional[str] = None
    lease: Optional[int] = None
    #: The worker's threads running this server's units now (``info.free_threads`` is from its last announcement).
    busy_threads: Optional[int] = None
    #: This server's units the worker holds now, running or queued.
    in_flight_units: Optional[int] = None
    error: Optional[str] = None

    @property
    def name(self) -> str:
        """The worker's name (``info.name``)."""
        return self.info.name


@dataclass
class Event:
    """One server-sent event of a job's stream: ``type`` is progress or done."""

    type: str
    job: Job


@dataclass
class Health:
    """The answer of /healthz."""

    status: str
    version: str


@dataclass
class TokenSpec:
    """Asks for a new token: ``role`` is read, submit or admin; ``expires_in`` a duration such as ``"36h"`` or ``"30d"``."""

    role: str
    name: Optional[str] = None
    expires_in: Optional[str] = None


@dataclass
class Token:
    """A token. ``token``, the secret, is only in the answer to :meth:`braid.Client.create_token`."""

    id: str
    role: str
    created_at: datetime
    name: Optional[str] = None
    expires_at: Optional[datetime] = None
    token: Optional[str] = None


T = TypeVar("T")

_TIME = re.compile(r"(\d{4}-\d\d-\d\d)[Tt ](\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|z|[+-]\d\d:\d\d)$")


def parse_time(s: str) -> datetime:
    """Parses an RFC 3339 time as Go writes it (nanoseconds, Z), to microseconds."""
    m = _TIME.match(s)
    if m is None:
        raise ValueError(f"not an RFC 3339 time: {s!r}")
    day, clock, frac, zone = m.groups()
    t = datetime.strptime(f"{day}T{clock}", "%Y-%m-%dT%H:%M:%S")
    if frac:
        t = t.replace(microsecond=int(frac[:6].ljust(6, "0")))
    if zone in ("Z", "z"):
        return t.replace(tzinfo=timezone.utc)
    sign = 1 if zone[0] == "+" else -1
    offset = timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    return t.replace(tzinfo=timezone(sign * offset)).astimezone(timezone.utc)


def decode(cls: Type[T], value: Any) -> T:
    """Builds a ``cls`` from decoded JSON, checking the types on the way.

    Raises ValueError (or a subclass) if a required property is missing or
    a value has the wrong type.
    """
    return typing.cast(T, _decode(cls, value, cls.__name__))


def _decode(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin is typing.Union:  # Optional[X]
        if value is None:
            return None
        (inner,) = [a for a in typing.get_args(tp) if a is not type(None)]
        return _decode(inner, value, where)
    if origin in (list, List):
        (item,) = typing.get_args(tp)
        _expect(value, list, where)
        return [_decode(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin in (dict, Dict):
        _, item = typing.get_args(tp)
        _expect(value, dict, where)
        return {str(k): _decode(item, v, f"{where}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return _decode_class(tp, value, where)
    if tp is datetime:
        _expect(value, str, where)
        return parse_time(value)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{where}: want a number, got {value!r}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{where}: want an integer, got {value!r}")
        return value
    if tp is Any:
        return value
    _expect(value, tp, where)
    return value


def _decode_class(cls: Any, value: Any, where: str) -> Any:
    _expect(value, dict, where)
    hints = _hints(cls)
    kwargs: Dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in value or (value[f.name] is None and _optional(hints[f.name])):
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError(f"{where}: no {f.name!r}")
            continue
        kwargs[f.name] = _decode(hints[f.name], value[f.name], f"{where}.{f.name}")
    return cls(**kwargs)


_HINTS: Dict[Any, Dict[str, Any]] = {}


def _hints(cls: Any) -> Dict[str, Any]:
    h = _HINTS.get(cls)
    if h is None:
        h = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
        _HINTS[cls] = h
    return h


def _optional(tp: Any) -> bool:
    return typing.get_origin(tp) is typing.Union and type(None) in typing.get_args(tp)


def _expect(value: Any, tp: Any, where: str) -> None:
    if not isinstance(value, tp) or (tp is not bool and isinstance(value, bool)):
        raise ValueError(f"{where}: want {tp.__name__}, got {value!r}")
