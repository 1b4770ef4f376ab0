"""A real headless Chromium (Debian's ``chromium``) driven by Playwright, against the app
served by uvicorn on loopback; screenshots land in ``runs/screenshots/<name>/``."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "runs" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip(
            "Debian's chromium is not installed: make test installs it as root "
            "(scripts/browser.sh: apt-get install chromium fonts-nanum)"
        )
    return found


@contextmanager
def serving(app, config=None) -> Iterator[str]:
    """The app on a free loopback port; ``config(app, host, port)`` makes the
    ``uvicorn.Config`` (default: uvicorn's own defaults, quiet)."""
    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    make = config or (lambda a, h, p: uvicorn.Config(a, host=h, port=p, log_level="warning"))
    server = uvicorn.Server(make(app, "127.0.0.1", port))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the web app did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@contextmanager
def browser() -> Iterator:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


class Shots:
    """Numbered full-page screenshots of one test run."""

    def __init__(self, name: str):
        self.folder = SCREENSHOTS / name
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)
        self.count = 0

    def take(self, page, what: str) -> Path:
        self.count += 1
        path = self.folder / f"{self.count:02d}-{what}.png"
        page.screenshot(path=str(path), full_page=True)
        return path


def submit(page, selector: str) -> None:
    """Click a form's button and wait for the page the server answers with."""
    with page.expect_navigation():
        page.click(selector)
    if page.locator("#error").count():
        pytest.fail(f"the app answered with an error: {page.inner_text('#error')}")


def log_in(page, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/login")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("#login")
    page.wait_for_url(f"{base}/")
