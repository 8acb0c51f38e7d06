"""Reads a server-sent event stream (text/event-stream)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, List, Protocol


class _LineReader(Protocol):
    def readline(self, limit: int = -1) -> bytes: ...


@dataclass
class RawEvent:
    """One event: its name ("message" unless the stream named it) and its data lines joined by newlines."""

    event: str
    data: str


MAX_LINE = 4 << 20


def read_events(r: _LineReader) -> Iterator[RawEvent]:
    """Yields the events of the stream r until it ends.

    An event is dispatched at the blank line that ends it; a last event
    without its blank line (the stream broke off) is not. Comments (lines
    starting with a colon), ``id`` and ``retry`` fields are skipped.
    """
    name = ""
    data: List[str] = []
    while True:
        raw = r.readline(MAX_LINE + 1)
        if not raw:
            return
        if len(raw) > MAX_LINE:
            raise ValueError(f"event stream line over {MAX_LINE} bytes")
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                yield RawEvent(name or "message", "\n".join(data))
            name, data = "", []
            continue
        if line.startswith(":"):
            continue
        fieldname, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if fieldname == "event":
            name = value
        elif fieldname == "data":
            data.append(value)
