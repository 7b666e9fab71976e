#!/usr/bin/env python3
"""An offline OpenAI Chat Completions API, as far as GitHub Copilot CLI needs it to run a turn
with a bring-your-own-key provider (COPILOT_PROVIDER_BASE_URL; Chat Completions is its default
wire API): `GET .../models` and `POST .../chat/completions`, streamed (SSE) or not.

Every request is recorded with its parsed body: check_copilot.py reads what the CLI sent, the
only direct proof that it loaded the session. Every turn is answered with a short text and no
tool call, so the CLI finishes normally. Like a real API, a request far larger than the
window Copilot serves models with is refused, so that a relay too big to be sent fails.

Used in-process by check_copilot.py (`MockChat`), or alone for a manual run:

    python3 mock_chat_copilot.py [PORT]      # prints the base URL; requests go to stdout
"""

import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class MockChat:
    ANSWER = "MOCK_COPILOT_OK"
    # Copilot CLI 1.0.102 budgets its prompts at 128k tokens; 4 bytes of request JSON a token
    # is generous, so only a request far over it is refused.
    CONTEXT_TOKENS = 128_000

    def __init__(self, port=0, on_request=None):
        self.requests = []
        self._lock = threading.Lock()
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep the check's output clean
                pass

            def _json(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.split("?")[0].endswith("/models"):
                    return self._json(200, {"object": "list", "data": [
                        {"id": "mock-model", "object": "model", "owned_by": "mock"}]})
                self._json(404, {"error": {"message": "mock: not found"}})

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                with mock._lock:
                    mock.requests.append({"path": self.path, "body": body})
                if on_request:
                    on_request(self.path, body)
                if not self.path.split("?")[0].endswith("/chat/completions"):
                    return self._json(404, {"error": {"message": "mock: only chat/completions"}})
                if len(raw) / 4 > mock.CONTEXT_TOKENS:
                    return self._json(400, {"error": {
                        "message": f"mock: prompt is too long ({len(raw) // 4} tokens estimated)",
                        "type": "invalid_request_error", "code": "context_length_exceeded"}})
                self._answer(body)

            def _answer(self, body):
                model = body.get("model", "mock-model")
                cid = "chatcmpl-" + uuid.uuid4().hex[:20]
                created = int(time.time())
                usage = {"prompt_tokens": 1000, "completion_tokens": 5, "total_tokens": 1005}
                if not body.get("stream"):
                    return self._json(200, {
                        "id": cid, "object": "chat.completion", "created": created, "model": model,
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": mock.ANSWER}}],
                        "usage": usage})
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()

                def event(choices, extra=None):
                    o = {"id": cid, "object": "chat.completion.chunk", "created": created,
                         "model": model, "choices": choices, **(extra or {})}
                    self.wfile.write(("data: " + json.dumps(o) + "\n\n").encode())

                event([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
                event([{"index": 0, "delta": {"content": mock.ANSWER}, "finish_reason": None}])
                event([{"index": 0, "delta": {}, "finish_reason": "stop"}])
                if (body.get("stream_options") or {}).get("include_usage"):
                    event([], {"usage": usage})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def chat_requests(self):
        with self._lock:
            return [r["body"] for r in self.requests if r["path"].split("?")[0].endswith("/chat/completions")]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


if __name__ == "__main__":
    def show(path, body):
        print(json.dumps({"path": path, "body": body}), flush=True)

    m = MockChat(int(sys.argv[1]) if len(sys.argv) > 1 else 0, on_request=show)
    print(m.base_url, file=sys.stderr, flush=True)
    try:
        m.thread.join()
    except KeyboardInterrupt:
        m.close()
