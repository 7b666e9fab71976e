"""An offline OpenAI Chat Completions API, as far as Qwen Code needs it to run a turn.

Qwen Code 0.24.4 takes it as a custom provider (`--auth-type openai --openai-base-url URL/v1
--openai-api-key KEY -m mock-model`). Every request is recorded (path and parsed body): the
`model` check of check_qwen.py reads what the CLI sent, the only direct proof that it loaded
the session. Every request gets a short text (streamed when asked), so each turn ends normally;
a request for a summary (`/compress`: no tools, asking for a `<state_snapshot>`) gets one. Each
reports 5,000 prompt tokens: a compression must make the context smaller than that, or Qwen Code
keeps the history as it was.
"""

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class MockChat:
    ANSWER = "MOCK_OK"
    SUMMARY = "<state_snapshot><overall_goal>Mock summary of the conversation.</overall_goal></state_snapshot>"
    MODEL = "mock-model"

    def __init__(self):
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
                mock._record("GET", self.path, None)
                if self.path.split("?")[0].endswith("/models"):
                    return self._json(200, {"object": "list", "data": [
                        {"id": mock.MODEL, "object": "model", "owned_by": "mock"}]})
                self._json(404, {"error": {"message": "mock: not found"}})

            def do_POST(self):
                size = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(size) if size else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                mock._record("POST", self.path, body)
                if not self.path.split("?")[0].endswith("/chat/completions"):
                    return self._json(404, {"error": {"message": "mock: only chat/completions"}})
                self._answer(body)

            def _answer(self, body):
                summary = not body.get("tools") and "<state_snapshot>" in json.dumps(body.get("messages"))
                text = mock.SUMMARY if summary else mock.ANSWER
                cid = "chatcmpl-" + uuid.uuid4().hex[:20]
                created = int(time.time())
                usage = {"prompt_tokens": 5000, "completion_tokens": 2, "total_tokens": 5002}
                head = {"id": cid, "created": created, "model": body.get("model", mock.MODEL)}
                if not body.get("stream"):
                    return self._json(200, dict(head, object="chat.completion", usage=usage, choices=[
                        {"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}]))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()

                def chunk(delta, finish=None):
                    o = dict(head, object="chat.completion.chunk",
                             choices=[{"index": 0, "delta": delta, "finish_reason": finish}])
                    self.wfile.write(("data: " + json.dumps(o) + "\n\n").encode())

                chunk({"role": "assistant", "content": ""})
                chunk({"content": text})
                chunk({}, "stop")
                if (body.get("stream_options") or {}).get("include_usage"):
                    o = dict(head, object="chat.completion.chunk", choices=[], usage=usage)
                    self.wfile.write(("data: " + json.dumps(o) + "\n\n").encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _record(self, method, path, body):
        with self._lock:
            self.requests.append({"method": method, "path": path, "body": body})

    def chat_requests(self):
        with self._lock:
            return [r["body"] for r in self.requests
                    if r["method"] == "POST" and r["path"].split("?")[0].endswith("/chat/completions")]

    def close(self):
        self.server.shutdown()
        self.server.server_close()
