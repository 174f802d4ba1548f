"""A local server that speaks enough of the OpenAI wire protocol for Grove's tests:
`POST /v1/embeddings` and `POST /v1/chat/completions` (non-streaming). The real `openai`
client talks to it over HTTP. Chat replies are scripted: each entry of `chat_replies`
is consumed by one request — a string (the assistant message content), a callable
(request body → content), or an int (answer with that HTTP status), or "sleep:<s>"
(stall that long before answering, to provoke client timeouts; a client that hangs up
meanwhile sets `hung_up`)."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


class FakeOpenAI:
    def __init__(self, dimension: int = 8):
        self.dimension = dimension
        self.requests: list[dict] = []
        self.fail_with: int | None = None  # HTTP status to answer with, if set
        self.chat_replies: list = []
        self.hung_up = threading.Event()  # a client closed the connection mid-answer
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "body": body,
                                        "auth": self.headers.get("Authorization")})
                if server.fail_with:
                    self._send(server.fail_with, {"error": {"message": "down",
                                                            "type": "server_error"}})
                    return
                if self.path == "/v1/chat/completions":
                    self._chat(body)
                    return
                if self.path != "/v1/embeddings":
                    self._send(404, {"error": {"message": "no such route"}})
                    return
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                size = body.get("dimensions") or server.dimension
                data = [{"object": "embedding", "index": i,
                         "embedding": server.vector(text, size).tolist()}
                        for i, text in enumerate(inputs)]
                self._send(200, {"object": "list", "data": data, "model": body["model"],
                                 "usage": {"prompt_tokens": 1, "total_tokens": 1}})

            def _chat(self, body: dict) -> None:
                reply = server.chat_replies.pop(0) if server.chat_replies else "{}"
                if isinstance(reply, str) and reply.startswith("sleep:"):
                    if self._stall(float(reply.split(":", 1)[1])):
                        server.hung_up.set()  # the client went away: no one to answer
                        return
                    reply = "{}"
                if isinstance(reply, int):
                    self._send(reply, {"error": {"message": "scripted failure",
                                                 "type": "server_error"}})
                    return
                content = reply(body) if callable(reply) else reply
                self._send(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "fake"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

            def _stall(self, seconds: float) -> bool:
                """Wait, watching the connection; True if the client closed it."""
                deadline = time.monotonic() + seconds
                while (left := deadline - time.monotonic()) > 0:
                    readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
                    if readable and not self.connection.recv(1, socket.MSG_PEEK):
                        return True
                return False

            def _send(self, status: int, payload: dict) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @staticmethod
    def vector(text: str, size: int) -> np.ndarray:
        rng = np.random.default_rng(abs(hash(text)) % (2**32))
        return rng.normal(size=size) * 3  # not normalised: the client must normalise

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
