"""The ``rolecall`` command line (``app.py``), one module per command group."""

from rolecall.cli.app import app, main

__all__ = ["app", "main"]
