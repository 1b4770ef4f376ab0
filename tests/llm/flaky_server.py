"""A minimal OpenAI-compatible HTTP server for tests, scriptable to fail.

It speaks ``GET /v1/models``, ``POST /v1/completions`` and ``POST /v1/chat/completions``
over a real socket on 127.0.0.1, so the ``openai`` SDK, ``httpx`` and rolecall's retry
logic run exactly as against vLLM or llama.cpp's server. Each generation request takes the
next action from ``script`` (then ``default``):

- ``"ok"``: a canned answer that echoes the prompt (``echo: <last prompt words>``);
- an int (``500``, ``429``, ``401``, ``404``...): that HTTP status with an OpenAI error body;
  ``(status, message)`` to choose the error message too;
- a dict: sent as the 200 answer's JSON as it is;
- ``"hang"``: sleep ``hang_seconds`` (longer than the client's timeout) before answering.

Every generation request's JSON body and headers are kept in ``requests``. ``delay`` makes
every answer wait, like a remote API (used by ``bench/llm_overhead.py``).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN_LOGPROB = -0.25  # every generated token's logprob; alternatives get lower ones


class FakeOpenAIServer:
    def __init__(
        self,
        script: list[Any] | None = None,
        *,
        default: Any = "ok",
        models: tuple[str, ...] = ("m",),
        hang_seconds: float = 1.6,
        delay: float = 0.0,
    ):
        self.script: deque[Any] = deque(script or ())
        self.default = default
        self.models = models
        self.hang_seconds = hang_seconds
        self.delay = delay  # seconds before every answer: a remote API's latency
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def calls(self) -> int:
        with self._lock:
            return len(self.requests)

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def next_action(self, record: dict[str, Any]) -> Any:
        with self._lock:  # handler threads run concurrently
            self.requests.append(record)
            return self.script.popleft() if self.script else self.default


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep pytest output clean
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/v1/models":
                return self._send(404, _error("not found", "invalid_request_error"))
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "test"}
                for m in server.models
            ]
            self._send(200, {"object": "list", "data": data})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.rstrip("/")
            if path not in ("/v1/completions", "/v1/chat/completions"):
                return self._send(404, _error(f"no route {path}", "invalid_request_error"))
            headers = {k.lower(): v for k, v in self.headers.items()}
            action = server.next_action({"path": path, "body": body, "headers": headers})
            time.sleep(server.delay)
            if action == "hang":
                time.sleep(server.hang_seconds)  # the client has given up by now
                action = 503
            if isinstance(action, dict):  # a raw answer, for odd-but-legal server output
                return self._send(200, action)
            if isinstance(action, int):
                action = (action, f"scripted failure {action}")
            if isinstance(action, tuple):
                return self._send(action[0], _error(action[1], "server_error"))
            chat = path.endswith("/chat/completions")
            self._send(200, chat_answer(body) if chat else completion_answer(body))

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and left: expected in the "hang" case

    return Handler


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _echo_tokens(text: str, body: dict[str, Any]) -> list[str]:
    words = ("echo: " + " ".join(text.split()[-3:])).split(" ")
    tokens = [w if i == 0 else " " + w for i, w in enumerate(words)]
    return tokens[: body.get("max_tokens") or len(tokens)]


def _alternatives(token: str, k: int) -> list[tuple[str, float]]:
    # The chosen token first, then made-up runners-up with falling logprobs.
    alts = [(token, TOKEN_LOGPROB)] + [(f"{token}~{j}", TOKEN_LOGPROB - j) for j in range(1, k)]
    return alts[:k]


def completion_answer(body: dict[str, Any]) -> dict[str, Any]:
    tokens = _echo_tokens(str(body.get("prompt", "")), body)
    logprobs = None
    if body.get("logprobs") is not None:
        k = int(body["logprobs"])
        logprobs = {
            "tokens": tokens,
            "token_logprobs": [TOKEN_LOGPROB] * len(tokens),
            # legacy format: one {token: logprob} dict per position, in no promised order
            "top_logprobs": [dict(reversed(_alternatives(t, k))) for t in tokens],
            "text_offset": [0] * len(tokens),
        }
    choice = {"index": 0, "text": "".join(tokens), "finish_reason": "length", "logprobs": logprobs}
    return {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 0,
        "model": body.get("model"),
        "choices": [choice],
        "usage": _usage(body, tokens),
    }


def chat_answer(body: dict[str, Any]) -> dict[str, Any]:
    last = body.get("messages", [{}])[-1].get("content", "")
    tokens = _echo_tokens(last, body)
    logprobs = None
    if body.get("logprobs"):
        k = int(body.get("top_logprobs") or 0)
        logprobs = {
            "content": [
                {
                    "token": t,
                    "logprob": TOKEN_LOGPROB,
                    "bytes": list(t.encode()),
                    "top_logprobs": [
                        {"token": a, "logprob": lp, "bytes": list(a.encode())}
                        for a, lp in _alternatives(t, k)
                    ],
                }
                for t in tokens
            ]
        }
    choice = {
        "index": 0,
        "finish_reason": "stop",
        "logprobs": logprobs,
        "message": {"role": "assistant", "content": "".join(tokens)},
    }
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model"),
        "choices": [choice],
        "usage": _usage(body, tokens),
    }


def _usage(body: dict[str, Any], tokens: list[str]) -> dict[str, int]:
    prompt = body.get("prompt") or " ".join(m["content"] for m in body.get("messages", []))
    n_in = len(str(prompt).split())
    return {
        "prompt_tokens": n_in,
        "completion_tokens": len(tokens),
        "total_tokens": n_in + len(tokens),
    }
