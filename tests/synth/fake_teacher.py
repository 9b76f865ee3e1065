"""A fake OpenAI-compatible chat endpoint on loopback, shared by the synth tests.

It records every request and answers from a script, then from a responder, then a default:
good answers, 429 and 500 (retried), a slow answer (timeout, retried), malformed JSON (repaired
or rejected), a refused json_schema response_format, and vision requests.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

HOST = "127.0.0.63"


def completion(content: str, prompt_tokens: int = 11, completion_tokens: int = 7) -> dict:
    """A chat.completion body whose first choice says `content`."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "tiny",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def request_text(body: dict) -> str:
    """All the text parts of a recorded request's messages, joined (images left out)."""
    parts = []
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        else:
            parts += [c.get("text", "") for c in content or [] if c.get("type") == "text"]
    return "\n".join(parts)


def request_images(body: dict) -> list[str]:
    """The image data URLs a recorded request carried."""
    return [
        c["image_url"]["url"]
        for m in body.get("messages", [])
        if isinstance(m.get("content"), list)
        for c in m["content"]
        if c.get("type") == "image_url"
    ]


@pytest.fixture
def server():
    """A fake endpoint. `script` is a list of steps answered in turn; once it is empty,
    `responder(body)` (if set) gives the step, else `default`. A step is an int status (error
    body, `retry-after-ms: 1` on 429), ("ok", content), ("raw", body bytes sent as
    application/json), ("sleep", s) (answer `default` after s seconds), ("reject_format",
    status) (refuse a request that carries a response_format, otherwise answer `default`), or
    ("redirect", (status, location)) (a 3xx to `location`, with a small JSON body).
    Every request is recorded in `requests`. Stops by itself after 60 s if the test does not."""
    state = {"script": [], "requests": [], "default": ("ok", "hello"), "responder": None}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                state["requests"].append(
                    {
                        "t": time.monotonic(),
                        "path": self.path,
                        "auth": self.headers.get("Authorization"),
                        "headers": dict(self.headers),
                        "body": body,
                    }
                )
                step = state["script"].pop(0) if state["script"] else None
            if step is None:
                responder = state["responder"]
                step = responder(body) if responder is not None else state["default"]
            if isinstance(step, int):
                headers = {"retry-after-ms": "1"} if step == 429 else None
                self._send(step, {"error": {"message": f"scripted {step}"}}, headers)
                return
            kind, arg = step
            if kind == "redirect":
                status, location = arg
                self._send(status, {"error": {"message": "moved-body"}}, {"Location": location})
                return
            if kind == "raw":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(arg)))
                self.end_headers()
                self.wfile.write(arg)
                return
            if kind == "sleep":
                time.sleep(arg)
                step = state["default"]
            elif kind == "reject_format":
                if "response_format" in body:
                    self._send(arg, {"error": {"message": "response_format not supported"}})
                    return
                step = state["default"]
            self._send(200, completion(step[1]))

    httpd = ThreadingHTTPServer((HOST, 0), Handler)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    watchdog = threading.Timer(60, httpd.shutdown)
    watchdog.daemon = True
    watchdog.start()
    state["base_url"] = f"http://{HOST}:{httpd.server_address[1]}/v1"
    yield state
    watchdog.cancel()
    httpd.shutdown()
    httpd.server_close()
