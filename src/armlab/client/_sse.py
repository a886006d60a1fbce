"""Reading the service's server-sent events (``GET /events``), with no I/O of its own."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

from armlab.events import EVENT_TYPES, ExperimentEvent

#: The comment with which the service confirms a subscription (events from then on arrive).
CONNECTED = "connected"
ENDED_BEFORE_CONNECTED = "GET /events: the stream ended before the service confirmed the subscription"


@dataclass(frozen=True)
class Message:
    """One server-sent event: its ``event`` name and its ``data``."""

    event: str
    data: str


class SSEDecoder:
    """Reads a ``text/event-stream`` one line at a time (the format's field rules)."""

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []

    def feed(self, line: str) -> Message | str | None:
        """A :class:`Message` at the blank line that ends it, a comment's text, else None."""
        if not line:
            message = Message(self._event or "message", "\n".join(self._data)) if self._data else None
            self._event, self._data = "", []
            return message
        if line.startswith(":"):
            return line[1:].strip()
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None


def decode_event(message: Message) -> ExperimentEvent | dict[str, Any]:
    """The :mod:`armlab.events` dataclass named by the message, or its JSON data as a dict
    when this armlab cannot build one: a kind it does not know, or one that lacks a field.
    Fields the dataclass does not have (a newer service's) are left out, so a service of
    another version never breaks the stream."""
    data = json.loads(message.data)
    kind = EVENT_TYPES.get(message.event)
    if kind is None:
        return data
    names = {f.name for f in fields(kind)}
    try:
        return kind(**{name: value for name, value in data.items() if name in names})
    except TypeError:  # a field of this armlab's dataclass that the service did not send
        return data
