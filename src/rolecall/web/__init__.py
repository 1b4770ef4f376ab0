"""The human-in-the-loop web app (``rolecall serve``): chat with Fix, labelling, export.

``create_app(engine)`` builds the FastAPI app; pages are server-rendered (Jinja2) and work
without JavaScript. See ``app.py`` for the parts.
"""

from rolecall.web.app import create_app

__all__ = ["create_app"]
