"""Several OpenAI-compatible servers behind one model string: which server takes a call.

``openai:http://n1:8000/v1,http://n2:8000/v1?model=NAME`` is a pool of two servers serving
the same model (N GPU nodes, one vLLM each: no load balancer needed). Each call goes to the
server with the fewest calls in flight (ties: the first in the list) that has room under its
own ``max_concurrency``. A server whose last call failed as if it were down (no connection,
a timeout, a 5xx) is skipped for ``cooldown`` seconds, so that ``LLM``'s retries land on
another server instead of on the dead node; it is tried again afterwards. When every server
is cooling down, calls still go out (to the least loaded): a pool never refuses a call that
one server alone would have made.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from rolecall.errors import BadModelString

EXAMPLE = "openai:http://localhost:8000/v1?model=NAME"
POOL_EXAMPLE = "openai:http://node1:8000/v1,http://node2:8000/v1?model=NAME"


def check_base_url(url: str) -> str:
    """The server's base URL without a trailing slash; ``BadModelString`` if unusable."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise BadModelString(
            f"'{url}' is not an http:// or https:// URL",
            fix=f"write the server's base URL, e.g. {EXAMPLE}",
        )
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        port_ok = False
    if not parts.hostname or not port_ok:
        raise BadModelString(
            f"'{url}' has no valid host[:port]", fix=f"write the server's base URL, e.g. {EXAMPLE}"
        )
    if parts.query or parts.fragment:
        raise BadModelString(
            f"'{url}' has a query or fragment, a base URL has neither",
            fix=f"put options after '?' only once, e.g. {EXAMPLE}",
        )
    return url.rstrip("/")


def split_base_urls(location: str) -> list[str]:
    """The model string's comma-separated base URLs, each checked; duplicates refused."""
    urls = [check_base_url(part.strip()) for part in location.split(",")]
    seen: set[str] = set()
    for url in urls:
        if url in seen:
            raise BadModelString(
                f"the server {url} is listed twice in '{location}'",
                fix=f"list each server once, e.g. {POOL_EXAMPLE}",
            )
        seen.add(url)
    return urls


@dataclass
class Ticket:
    """One call's claim on a server: which one, and when it was sent."""

    server: int
    sent: float


class ServerPool:
    """Thread-safe choice of the server for each call (see the module docstring).

    ``calls[i]`` counts the calls sent to server ``i``; ``in_flight[i]`` those not yet back.
    """

    def __init__(
        self,
        size: int,
        per_server: int,
        cooldown: float,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.per_server = per_server
        self.cooldown = cooldown
        self.clock = clock
        self.in_flight = [0] * size
        self.calls = [0] * size
        self._down_since: list[float | None] = [None] * size
        self._changed = threading.Condition()

    def acquire(self) -> Ticket:
        """Claim a server for one call, waiting while every usable one is full."""
        with self._changed:
            while True:
                now = self.clock()
                server = self._pick(now)
                if server is not None:
                    self.in_flight[server] += 1
                    self.calls[server] += 1
                    return Ticket(server, now)
                self._changed.wait(timeout=self._next_recovery(now))

    def release(self, ticket: Ticket, *, down: bool) -> None:
        """Return the claim; ``down``: the server failed as if it were down."""
        with self._changed:
            self.in_flight[ticket.server] -= 1
            since = self._down_since[ticket.server]
            if down:
                self._down_since[ticket.server] = self.clock()
            elif since is not None and ticket.sent >= since:
                # subtle: only a call sent after the failure proves the server is back; one
                # sent before it may succeed while the node is already dead
                self._down_since[ticket.server] = None
            self._changed.notify_all()

    def cooling(self, now: float | None = None) -> list[int]:
        """The servers skipped now because they failed less than ``cooldown`` ago."""
        now = self.clock() if now is None else now
        return [i for i, since in enumerate(self._down_since) if self._is_cooling(since, now)]

    def _pick(self, now: float) -> int | None:
        cooling = set(self.cooling(now))
        live = [i for i in range(len(self.in_flight)) if i not in cooling]
        # every server cooling down: try them all (a lone server is retried as before)
        candidates = live or list(range(len(self.in_flight)))
        open_ = [i for i in candidates if self.in_flight[i] < self.per_server]
        return min(open_, key=lambda i: self.in_flight[i]) if open_ else None

    def _next_recovery(self, now: float) -> float | None:
        ends = [since + self.cooldown - now for since in self._down_since if since is not None]
        ends = [end for end in ends if end > 0]
        return min(ends) if ends else None

    def _is_cooling(self, since: float | None, now: float) -> bool:
        return since is not None and now - since < self.cooldown
