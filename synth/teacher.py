"""Client of an OpenAI-compatible chat endpoint (POST {base_url}/chat/completions), shared by stages."""

from __future__ import annotations

import json
import random
import time
import urllib.error
import urllib.request
from typing import Any

_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class TeacherError(RuntimeError):
    """The teacher endpoint failed for good (after retries), or answered something unusable."""


class TeacherClient:
    """Minimal, dependency-free chat client with retries and clear errors."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        *,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        seed: int = 0,
    ):
        if not base_url or not base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"teacher base_url {base_url!r} must be an http(s) URL, e.g. http://127.0.0.1:8000/v1"
            )
        if not model:
            raise ValueError("teacher model name is empty; set the model the endpoint serves")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self._rng = random.Random(seed)

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=json.dumps(payload).encode("utf-8"),
            headers=headers,
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:
            return json.loads(resp.read().decode("utf-8"))

    def chat(self, messages: list[dict[str, str]], **params: Any) -> str:
        """Send chat messages and return the first choice's content; retry transient failures."""
        payload = {"model": self.model, "messages": messages, **params}
        last = ""
        for attempt in range(self.max_retries + 1):
            try:
                data = self._post(payload)
            except urllib.error.HTTPError as exc:
                body = exc.read()[:300].decode("utf-8", "replace")
                last = f"HTTP {exc.code} from {self.base_url}/chat/completions: {body}"
                if exc.code not in _RETRY_STATUS:
                    raise TeacherError(last) from exc
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                last = f"cannot reach {self.base_url}: {exc}"
            except json.JSONDecodeError as exc:
                raise TeacherError(f"{self.base_url} answered non-JSON: {exc}") from exc
            else:
                try:
                    return data["choices"][0]["message"]["content"]
                except (KeyError, IndexError, TypeError) as exc:
                    raise TeacherError(
                        f"{self.base_url} answered without choices[0].message.content: {str(data)[:300]}"
                    ) from exc
            if attempt < self.max_retries:
                # Jittered exponential backoff, seeded so runs are reproducible.
                time.sleep(self.backoff_s * 2**attempt * (0.5 + self._rng.random()))
        raise TeacherError(f"gave up after {self.max_retries + 1} attempts: {last}")
