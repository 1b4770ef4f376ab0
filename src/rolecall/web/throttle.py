"""Login throttling: per account and per client address, with a lockout that ends by itself.

Limits (``LoginLimits``; the defaults, chosen for a team of annotators behind one office
address):

- an **account** (the user name typed, known or not) is locked for ``lockout_s`` (15 min)
  after ``per_account`` (10) wrong passwords within ``window_s`` (15 min);
- a **client address** is locked for ``lockout_s`` after ``per_address`` (40) wrong
  passwords within ``window_s``, whatever names it tried.

An attempt is counted before its password is checked (``begin``: it is *in flight* until
``end``), so a burst of simultaneous tries is checked at most up to the limit: tries beyond
what the failures so far and those in flight leave are refused at once (429, "try again in
1 seconds"), and the lock starts when the failures in flight come back.

While a lock holds, every login attempt for that account or from that address is refused
(429, with a message and a ``Retry-After`` header saying when to try again) before any
password is checked, the right password included: otherwise a guesser would learn the
password the moment it is tried. A lock ends by itself; a successful login clears its
account's count. Unknown user names are counted like known ones, so a lock says nothing
about whether an account exists.

Subtle: the counts live in the app's process (``rolecall serve`` runs one), so a restart
clears them, and with several worker processes each counts on its own. Behind a reverse
proxy the client address is the proxy's unless uvicorn trusts its ``X-Forwarded-For``
(``--forwarded-allow-ips``); otherwise every person shares one address count.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LoginLimits:
    per_account: int = 10
    per_address: int = 40
    window_s: float = 15 * 60
    lockout_s: float = 15 * 60


BUSY_WAIT_S = 1.0  # a try refused because the tries in flight may use up the limit


@dataclass
class _Count:
    failures: list[float] = field(default_factory=list)
    locked_until: float = 0.0
    in_flight: int = 0


class LoginThrottle:
    """Counts wrong passwords per key (``account:NAME``, ``address:IP``); thread-safe."""

    MAX_KEYS = 100_000  # forget idle keys past this many (a flood of made-up names)

    def __init__(
        self, limits: LoginLimits = LoginLimits(), clock: Callable[[], float] = time.monotonic
    ):
        self.limits, self.clock = limits, clock
        self._counts: dict[str, _Count] = {}
        self._lock = threading.Lock()

    @staticmethod
    def keys(username: str, address: str | None) -> tuple[str, str]:
        return f"account:{username.strip()}", f"address:{address or 'unknown'}"

    def _limit(self, key: str) -> int:
        return self.limits.per_account if key.startswith("account:") else self.limits.per_address

    def wait_left(self, keys: tuple[str, ...]) -> float:
        """Seconds until every key may try again; 0 when none is locked."""
        now = self.clock()
        with self._lock:
            return self._locked_for(keys, now)

    def _locked_for(self, keys: tuple[str, ...], now: float) -> float:
        return max([self._counts[k].locked_until - now for k in keys if k in self._counts] + [0.0])

    def begin(self, keys: tuple[str, ...]) -> float:
        """Take one try for every key before the password is checked: 0.0 when it may go on
        (then call ``end``), else the seconds to wait (a lock, or the tries in flight may
        reach a limit: ``BUSY_WAIT_S``)."""
        now = self.clock()
        with self._lock:
            wait = self._locked_for(keys, now)
            if wait > 0:
                return wait
            counts = [self._counts.setdefault(key, _Count()) for key in keys]
            for key, count in zip(keys, counts):
                recent = sum(now - t < self.limits.window_s for t in count.failures)
                if recent + count.in_flight >= self._limit(key):
                    return BUSY_WAIT_S
            for count in counts:
                count.in_flight += 1
            return 0.0

    def end(self, keys: tuple[str, ...], ok: bool | None) -> None:
        """The try taken by ``begin`` came back: right (True), wrong (False) or not
        checked at all (None: an error; it counts as nothing). Released and recorded under
        one lock: between the two, another ``begin`` would see a free slot and no failure."""
        now = self.clock()
        with self._lock:
            for key in keys:
                count = self._counts.get(key)
                if count is not None:
                    count.in_flight = max(0, count.in_flight - 1)
            if ok is True:
                self._succeeded(keys[0], now)
            elif ok is False:
                self._failed(keys, now)

    def failed(self, keys: tuple[str, ...]) -> None:
        now = self.clock()
        with self._lock:
            self._failed(keys, now)

    def succeeded(self, account_key: str) -> None:
        now = self.clock()
        with self._lock:
            self._succeeded(account_key, now)

    def _failed(self, keys: tuple[str, ...], now: float) -> None:
        if len(self._counts) > self.MAX_KEYS:
            self._forget_idle(now)
        for key in keys:
            count = self._counts.setdefault(key, _Count())
            count.failures = [t for t in count.failures if now - t < self.limits.window_s] + [now]
            if len(count.failures) >= self._limit(key):
                count.locked_until, count.failures = now + self.limits.lockout_s, []

    def _succeeded(self, account_key: str, now: float) -> None:
        count = self._counts.get(account_key)
        if count is not None and count.locked_until <= now:
            count.failures = []
            if not count.in_flight:
                del self._counts[account_key]

    def _forget_idle(self, now: float) -> None:
        for key in [
            k
            for k, c in self._counts.items()
            if c.locked_until <= now
            and not c.in_flight
            and not any(now - t < self.limits.window_s for t in c.failures)
        ]:
            del self._counts[key]
