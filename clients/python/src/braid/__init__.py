"""braid: the Python client of braid's HTTP control plane.

Upload objects, submit jobs and follow them, download their results, list
the operations and the workers::

    import braid

    c = braid.Client()  # $BRAID_SERVER (else http://127.0.0.1:7070), $BRAID_TOKEN
    obj = c.put_file("photo.png")
    job = c.submit("blur", obj, params={"sigma": 3})
    job = c.wait(job, progress=lambda j: print(j.progress.done, "/", j.progress.total))
    c.download(job, "photo-blurred.png")  # JobFailedError, with the job's error, if it failed

A failed call raises a :class:`BraidError`; an answer from the server
carries its HTTP ``status`` and its stable error ``code``
(``object_not_found``, ``unknown_operation``, ...). The classes of
:mod:`braid.models` are the schemas of the server's OpenAPI document
(GET /v1/openapi.json). Only the standard library is used.
"""

__version__ = "0.1.0"

from .client import DEFAULT_SERVER, Client, read_config  # noqa: E402
from .errors import (  # noqa: E402
    BadRequestError,
    BraidError,
    BraidTimeoutError,
    ConflictError,
    ConnectionLostError,
    ForbiddenError,
    JobFailedError,
    NoServerError,
    NotBraidError,
    NotFoundError,
    RequestTimeoutError,
    ServerError,
    TooLargeError,
    UnauthorizedError,
    UnavailableError,
    WrongURLError,
)
from .models import (  # noqa: E402
    TERMINAL_STATES,
    Endpoint,
    Event,
    Health,
    Job,
    JobSpec,
    Manifest,
    ManifestUnit,
    Object,
    OpLimits,
    Operation,
    OperationSpec,
    Parameter,
    Progress,
    Token,
    TokenSpec,
    UnitStat,
    Worker,
    WorkerInfo,
)

__all__ = [
    "__version__",
    "Client",
    "DEFAULT_SERVER",
    "read_config",
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
    "TERMINAL_STATES",
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
]
