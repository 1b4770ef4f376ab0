"""Serving a trained bot: the Retrieve-fail-Generate pipeline (``bot.py``)."""
