"""Korean text helpers shared across the package: the Kiwi analyser and a Hangul test."""

from __future__ import annotations

import functools
import re

from rolecall.errors import RolecallError

# Hangul syllables, conjoining jamo and compatibility jamo
HANGUL_RE = re.compile("[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")


@functools.cache
def kiwi():
    """The one Kiwi analyser of the process: loading its model takes about a second."""
    try:
        from kiwipiepy import Kiwi
    except ImportError:
        raise RolecallError(
            "morpheme counts need the Korean analyser kiwipiepy",
            fix="pip install kiwipiepy (its model comes with it)",
        ) from None
    return Kiwi()
