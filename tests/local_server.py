"""Start llama.cpp's OpenAI-compatible server on loopback (for benchmarks, tests and users
who want the embedded model behind the ``openai:`` backend).

``python -m llama_cpp.server`` comes with ``llama-cpp-python[server]``. The server is a
child process bound to 127.0.0.1 on a free port; ``LocalServer`` waits until it answers
``/v1/models`` and kills it on exit.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from rolecall.errors import BackendError, BackendNotInstalled


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LocalServer:
    def __init__(
        self,
        model_path: str | Path,
        log_path: str | Path,
        n_ctx: int = 2048,
        startup_timeout: float = 180.0,
    ):
        try:
            import llama_cpp.server.app  # noqa: F401
        except ImportError as exc:
            raise BackendNotInstalled(
                f"llama_cpp.server is not importable ({exc})",
                fix="pip install 'llama-cpp-python[server]'",
            ) from None
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = Path(log_path)
        self._command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model_path),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(n_ctx),
        ]
        self._timeout = startup_timeout
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> LocalServer:
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(self._command, stdout=log, stderr=subprocess.STDOUT)
        self._wait()
        return self

    def _wait(self) -> None:
        deadline = time.monotonic() + self._timeout
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BackendError(
                    f"llama.cpp server exited ({self.process.returncode}); log: {self.tail()}"
                )
            try:
                with opener.open(f"{self.url}/models", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        self.__exit__()
        raise BackendError(
            f"llama.cpp server not up after {self._timeout:.0f}s; log: {self.tail()}"
        )

    def tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
