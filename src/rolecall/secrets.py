"""One masker for every secret the project prints: cache, database and model-server URLs,
error messages, logs.

``masked(text)`` finds, anywhere in the text:

- a URL's user-info password (``postgresql://ann:SECRET@host/db`` -> ``ann:***@``);
- a query parameter whose name says it is secret (``password=``, ``sslpassword=``,
  ``token=``, ``access_token=``, ``key=``, ``api_key=``, ``secret=``, ``auth=``, ...);
- the value of any environment variable named ``*_API_KEY``, ``*_TOKEN`` or
  ``*_SECRET`` (and ``*_PASSWORD``), wherever it appears.

Masking too much is safe, too little is not: a parameter named ``monkey=`` is masked
as well.
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote

MASK = "***"
# a path keeps one slash of "//" ("scheme:/user:pw@host"); a decoded password may hold
# spaces ("my pass"), never "/" or "@" (a URL must encode them, so a "/" means a path)
_USERINFO = re.compile(
    r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*:/{1,2}[^\s:/@]*):(?P<secret>[^\s@/]*(?: [^\s@/]+)*)@"
)
_PARAMETER = re.compile(r"(?P<head>[?&;](?P<name>[A-Za-z0-9_.%\-]*)=)(?P<secret>[^&;#\s'\"]*)")
# a name is read as the driver reads it, percent-decoded ("pass%77ord" is "password")
_SECRET_NAME = re.compile(r"pass|pwd|token|secret|key|auth", re.IGNORECASE)
SECRET_VARIABLES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
MIN_SECRET = 4  # shorter values would mask ordinary words


def masked(text: object, *known: str | None) -> str:
    """``text`` (anything, as ``str``) with every secret it shows replaced by ``***``, and
    each ``known`` secret (a URL's decoded password, say) wherever it appears."""
    out = str(text)
    for secret in known:
        if secret:
            out = out.replace(secret, MASK)
    out = _USERINFO.sub(lambda m: f"{m['head']}:{MASK}@" if m["secret"] else m[0], out)
    out = _PARAMETER.sub(
        lambda m: (
            f"{m['head']}{MASK}"
            if m["secret"] and _SECRET_NAME.search(unquote(m["name"]))
            else m[0]
        ),
        out,
    )
    for name, value in os.environ.items():
        if name.upper().endswith(SECRET_VARIABLES) and len(value) >= MIN_SECRET:
            out = out.replace(value, MASK)
    return out
