"""How ``rolecall serve`` runs the app under uvicorn: which peers may name the client.

uvicorn believes ``X-Forwarded-For`` and ``X-Forwarded-Proto`` from 127.0.0.1 by default,
so with no proxy in front anyone on the machine (or a tunnel ending there) could claim any
address and slip past the per-address login lock. Here forwarded headers count only from
the proxies the admin names (``--forwarded-allow-ips``); by default from none, and the
client address is the connection's own.
"""

from __future__ import annotations

from typing import Any


def server_config(app: Any, host: str, port: int, forwarded_allow_ips: str | None = None):
    """A ``uvicorn.Config`` for the app; ``forwarded_allow_ips``: the proxies whose
    forwarded headers are believed (comma-separated addresses or networks, ``*`` for
    any), None for none."""
    import uvicorn

    trusted = (forwarded_allow_ips or "").strip()
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        proxy_headers=bool(trusted),
        forwarded_allow_ips=trusted or "",
    )
