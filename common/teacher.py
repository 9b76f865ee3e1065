"""The teacher: any OpenAI-compatible chat endpoint (vLLM, llama.cpp, Ollama, hosted APIs), shared
by stages, on the official `openai` client (retries on 408/409/429/5xx and timeouts, typed errors).

Around it:
- consent: an item the one consent rule refuses (common.consent: `training_allowed` not the
  boolean true, or opted out by the client's `consent` ledger) is refused before any request
  (`items=`);
- a rate limit in requests per second, shared by the threads using one client;
- a content-addressed cache on disk: sha256 of the canonical request (model, messages,
  response_format, params), so a rerun sends no request that was already answered;
- structured output (`chat_json`): a pydantic model's JSON schema in `response_format` where the
  endpoint accepts it (else in the prompt), validated, with one repair retry, then
  `TeacherSchemaError`;
- images as data URLs for vision models (`image_content`, `user_message`);
- token and cost accounting (`usage()`, a dict for metadata; cost from per-1k-token prices for
  the model, 0 with `cost_known` False without them).

The key comes from `REFINERY_TEACHER_API_KEY` unless given; openai's own environment (OPENAI_API_KEY,
OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_PROJECT_ID) is never used or sent.

Every request is bounded as a whole, not per read: `timeout` seconds from connecting to the last
byte of the answer (an endpoint that drips its answer a byte at a time is cut there, headers or
body), and at most `max_answer_bytes` read (MAX_ANSWER_BYTES, 4 MiB); either is a TeacherError
after the client's retries. An answer that is not valid Unicode (a lone surrogate, a body not
UTF-8) is a TeacherError too, never cached.

Requests (which hold document text) go to the configured endpoint only: a redirect is not
followed (it is a TeacherError naming the endpoint), and no proxy, .netrc or other setting is
read from the environment (HTTP(S)_PROXY, ALL_PROXY); a proxy is used only when configured
(`proxy=`, else `REFINERY_TEACHER_PROXY`). A private CA bundle is read from SSL_CERT_FILE /
SSL_CERT_DIR.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import os
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpcore2
import httpx2
import openai
from pydantic import BaseModel, ValidationError

API_KEY_ENV = "REFINERY_TEACHER_API_KEY"
PROXY_ENV = "REFINERY_TEACHER_PROXY"  # the one proxy setting read (HTTP(S)_PROXY never are)


def _verify():
    """TLS verification for the teacher client: True (httpx's default CAs), or a context of the
    CA bundle SSL_CERT_FILE / SSL_CERT_DIR name (trust_env=False would otherwise stop httpx
    reading them, and a teacher behind a private CA could not be reached)."""
    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    if not cafile and not capath:
        return True
    import ssl

    return ssl.create_default_context(cafile=cafile or None, capath=capath or None)


MAX_ANSWER_BYTES = 4 * 1024 * 1024  # what one request may read, headers and body
_OPENAI_INITIAL_RETRY_DELAY = 0.5  # openai's first backoff step; `backoff_s` rescales the schedule
_SCHEMA_REJECTED = (
    400,
    422,
)  # statuses with which an endpoint refuses a json_schema response_format
_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
_ITEM_ID_KEYS = ("id", "pair_id", "doc_id", "url", "image_url", "image_path", "path")


class TeacherError(RuntimeError):
    """The teacher endpoint failed for good (after retries), answered something unusable, or the
    request was refused before sending (consent). `status_code`: the endpoint's HTTP status, if any."""

    def __init__(self, message: str, *, status_code: int | None = None):
        super().__init__(message)
        self.status_code = status_code


class TeacherSchemaError(TeacherError):
    """A structured answer did not match its schema, even after the one repair retry."""

    def __init__(self, message: str, *, content: str, errors: str):
        super().__init__(message)
        self.content = content
        self.errors = errors


# --------------------------------------------------------------------------------------------
# consent


def _item_name(item: Any) -> str:
    get = item.get if isinstance(item, Mapping) else lambda k: getattr(item, k, None)
    for key in _ITEM_ID_KEYS:
        value = get(key)
        if value is not None and value != "":
            return f"{key}={value!r}"
    return f"{type(item).__name__} {str(item)[:80]!r}"


def send_allowed(item: Any, consent: Any = None) -> bool:
    """True only if the item (a mapping or an object) may go to a teacher under the one consent
    rule (common.consent): its `training_allowed` is the boolean true (Python's or NumPy's; a
    string, 1, None or a missing flag is no), and `consent` (a `common.consent.Consent`, the
    ledger; none: the flag alone) has not opted out its document."""
    from common.consent import NO_LEDGER

    return (consent or NO_LEDGER).allows(item)


def check_send_allowed(items: Iterable[Any], consent: Any = None) -> None:
    """Raise TeacherError naming the first item that may not go to a teacher, and why."""
    from common.consent import NO_LEDGER, flag_of, flag_true

    rule = consent or NO_LEDGER
    for item in items:
        why = rule.why_not(item)
        if why is not None:
            flag = flag_of(item)
            if flag is None:
                why = "it has training_allowed missing or null; carry it from the source's consent"
            elif not flag_true(flag):
                why = f"it has training_allowed={flag!r} ({why})"
            raise TeacherError(
                f"refused to send item {_item_name(item)} to the teacher: {why}; "
                "drop opted-out items before calling the teacher"
            )


# --------------------------------------------------------------------------------------------
# images


def image_mime(data: bytes) -> str:
    """The MIME type of PNG, JPEG, GIF or WEBP bytes; ValueError for anything else."""
    for magic, mime in _IMAGE_MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    raise ValueError(
        f"image bytes start with {data[:12]!r}: not PNG, JPEG, GIF or WEBP; "
        "re-encode the image (e.g. with Pillow) before sending it to a vision model"
    )


def image_data_url(image: bytes | str | os.PathLike, mime: str | None = None) -> str:
    """`data:<mime>;base64,...` for image bytes or an image file."""
    if isinstance(image, bytes | bytearray):
        data = bytes(image)
    else:
        path = Path(image)
        if not path.is_file():
            raise ValueError(f"image file {path} does not exist; pass the bytes or a file path")
        data = path.read_bytes()
    mime = mime or image_mime(data)
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def image_content(
    image: bytes | str | os.PathLike, *, mime: str | None = None, detail: str | None = None
) -> dict[str, Any]:
    """An `image_url` content part carrying the image as a data URL (vision models)."""
    part: dict[str, Any] = {"url": image_data_url(image, mime)}
    if detail is not None:
        if detail not in ("auto", "low", "high"):
            raise ValueError(f"image detail {detail!r} must be auto, low or high")
        part["detail"] = detail
    return {"type": "image_url", "image_url": part}


def user_message(
    text: str, images: Sequence[bytes | str | os.PathLike] = (), *, detail: str | None = None
) -> dict[str, Any]:
    """A user message: the text, then each image as a data URL. Plain text without images."""
    if not images:
        return {"role": "user", "content": text}
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    parts += [image_content(im, detail=detail) for im in images]
    return {"role": "user", "content": parts}


# --------------------------------------------------------------------------------------------
# cache and rate limit


def canonical_request(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    response_format: Mapping[str, Any] | None,
    params: Mapping[str, Any],
) -> str:
    """The request as canonical JSON (sorted keys, no spaces): what the cache key hashes."""
    body = {
        "model": model,
        "messages": list(messages),
        "response_format": response_format,
        "params": dict(params),
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    response_format: Mapping[str, Any] | None,
    params: Mapping[str, Any],
) -> str:
    """sha256 hex of the canonical request."""
    canon = canonical_request(model, messages, response_format, params)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


class ResponseCache:
    """Answers on disk, one JSON file per request key (`<dir>/<key[:2]>/<key>.json`)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        p = self.path(key)
        try:
            return json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise TeacherError(
                f"teacher cache entry {p} is corrupt ({exc}); delete it to ask again"
            ) from exc

    def put(self, key: str, entry: dict[str, Any]) -> None:
        p = self.path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f"{p.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(entry, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, p)  # atomic: a reader sees the whole entry or none


class RateLimiter:
    """At most `per_s` request starts per second, across threads (evenly spaced slots)."""

    def __init__(self, per_s: float):
        if not per_s > 0:
            raise ValueError(f"teacher rate limit {per_s!r} must be > 0 requests/s")
        self.interval = 1.0 / per_s
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next)
            self._next = slot + self.interval
        if slot > now:
            time.sleep(slot - now)


# --------------------------------------------------------------------------------------------
# one request's budget: a deadline for the whole of it and a cap on what it reads


class AnswerTooLarge(httpcore2.ReadError):
    """The endpoint sent more than the client's `max_answer_bytes` for one request."""


class _Budget(threading.local):
    """The budget of the request this thread is sending (set per attempt by the transport)."""

    deadline: float | None = None
    left: int | None = None  # bytes it may still read

    def timeout(self, timeout: float | None, late: type[Exception]) -> float | None:
        """A socket operation's timeout: no later than the request's deadline (`late` past it)."""
        if self.deadline is None:
            return timeout
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise late("the request's deadline passed before its answer was complete")
        return remaining if timeout is None else min(timeout, remaining)


class _BoundedStream(httpcore2.NetworkStream):
    """A connection whose every read and write ends by the request's deadline, and whose reads
    count against the request's byte cap."""

    def __init__(self, inner: httpcore2.NetworkStream, budget: _Budget, cap: int):
        self._inner, self._budget, self._cap = inner, budget, cap

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = self._inner.read(max_bytes, self._budget.timeout(timeout, httpcore2.ReadTimeout))
        if self._budget.left is not None:
            self._budget.left -= len(data)
            if self._budget.left < 0:
                raise AnswerTooLarge(f"the answer is larger than {self._cap} bytes")
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._budget.timeout(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore2.NetworkStream:
        t = self._budget.timeout(timeout, httpcore2.ConnectTimeout)
        tls = self._inner.start_tls(ssl_context, server_hostname, t)
        return _BoundedStream(tls, self._budget, self._cap)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _BoundedBackend(httpcore2.NetworkBackend):
    """httpcore's network backend with every connection a `_BoundedStream`."""

    def __init__(self, inner: httpcore2.NetworkBackend, budget: _Budget, cap: int):
        self._inner, self._budget, self._cap = inner, budget, cap

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        t = self._budget.timeout(timeout, httpcore2.ConnectTimeout)
        stream = self._inner.connect_tcp(host, port, t, local_address, socket_options)
        return _BoundedStream(stream, self._budget, self._cap)

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        t = self._budget.timeout(timeout, httpcore2.ConnectTimeout)
        stream = self._inner.connect_unix_socket(path, t, socket_options)
        return _BoundedStream(stream, self._budget, self._cap)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _BoundedTransport(httpx2.HTTPTransport):
    """httpx's transport with a budget per request: `total_s` from its start to the last byte of
    its answer (httpx's own timeouts are per read: an answer dripped a byte at a time never ends)
    and at most `max_bytes` read. Each attempt (openai retries) gets a fresh budget."""

    def __init__(self, *, total_s: float, max_bytes: int, **kwargs: Any):
        super().__init__(**kwargs)
        self._total_s, self._max_bytes = total_s, max_bytes
        self._budget = _Budget()
        pool = getattr(self, "_pool", None)  # httpcore's pool: its backend opens connections
        if pool is None or not hasattr(pool, "_network_backend"):
            raise RuntimeError(
                "httpx/httpcore no longer keep a network backend on the transport's pool; the "
                "teacher's request deadline cannot be installed: pin httpx2/httpcore2 as in "
                "requirements.lock"
            )
        pool._network_backend = _BoundedBackend(pool._network_backend, self._budget, max_bytes)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self._budget.deadline = time.monotonic() + self._total_s
        self._budget.left = self._max_bytes
        return super().handle_request(request)


def _too_large(exc: BaseException | None) -> AnswerTooLarge | None:
    """The AnswerTooLarge somewhere in an exception's chain of causes."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, AnswerTooLarge):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


# --------------------------------------------------------------------------------------------
# the client


class _OpenAI(openai.OpenAI):
    """openai's client with its exponential backoff rescaled so the first wait is `backoff_s`;
    a server's Retry-After is still obeyed as is."""

    backoff_s = _OPENAI_INITIAL_RETRY_DELAY

    @property
    def user_agent(self) -> str:
        return f"Refinery-teacher openai-python/{self._version}"

    def _calculate_retry_timeout(self, remaining_retries, options, response_headers=None):
        wait = super()._calculate_retry_timeout(remaining_retries, options, response_headers)
        if self._parse_retry_after_header(response_headers) == wait:
            return wait  # server-directed
        return wait * self.backoff_s / _OPENAI_INITIAL_RETRY_DELAY


@functools.lru_cache(maxsize=256)
def _schema_json(schema: type[BaseModel]) -> str:
    """A pydantic model's JSON schema as JSON text, built once per model: pydantic rebuilds it on
    every `model_json_schema()` call (about 2 ms, as much as the rest of a request's own work)."""
    return json.dumps(schema.model_json_schema())


def _token_count(value: Any) -> int:
    """A usage figure as a count: a non-negative integer (or integral float) below 2**53, else 0.

    Usage is accounting, not the answer: an endpoint's "lots", -5 or 1e30 must not end a run."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return 0
    return int(value) if 0 <= value < 2**53 else 0


def _strip_fences(text: str) -> str:
    text = text.strip()
    m = re.fullmatch(r"```[\w-]*\s*\n?(.*?)\n?```", text, re.S)
    return m.group(1).strip() if m else text


class TeacherClient:
    """Chat with an OpenAI-compatible endpoint; see the module docstring for what is around it."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        *,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        requests_per_s: float | None = None,
        cache_dir: str | os.PathLike | None = None,
        price_per_1k_prompt_tokens: float | None = None,
        price_per_1k_completion_tokens: float | None = None,
        json_schema: bool | None = None,
        consent: Any = None,
        proxy: str | None = None,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ):
        if not base_url or not base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"teacher base_url {base_url!r} must be an http(s) URL, e.g. http://127.0.0.1:8000/v1"
            )
        if not model:
            raise ValueError("teacher model name is empty; set the model the endpoint serves")
        if (price_per_1k_prompt_tokens is None) != (price_per_1k_completion_tokens is None):
            raise ValueError(
                "teacher prices: give both price_per_1k_prompt_tokens and "
                "price_per_1k_completion_tokens, or neither"
            )
        if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"teacher timeout {timeout!r} must be a positive number of seconds")
        if not (isinstance(max_answer_bytes, int) and max_answer_bytes > 0):
            raise ValueError(
                f"teacher max_answer_bytes {max_answer_bytes!r} must be a positive integer"
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.max_answer_bytes = max_answer_bytes
        self.api_key = api_key if api_key is not None else os.environ.get(API_KEY_ENV) or None
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.prices = (price_per_1k_prompt_tokens, price_per_1k_completion_tokens)
        # None: try json_schema response_format, fall back to the schema in the prompt if refused.
        self.json_schema = json_schema
        # The consent rule every `items=` is checked against (common.consent.Consent, with the
        # lake's ledger); None: the items' own flags only.
        self.consent = consent
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self.limiter = RateLimiter(requests_per_s) if requests_per_s else None
        self._lock = threading.Lock()
        self._usage = {
            "requests": 0,
            "cache_hits": 0,
            "failures": 0,
            "repairs": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "total_tokens": 0,
            "cached_total_tokens": 0,
        }
        # Only a configured proxy: trust_env=False keeps HTTP(S)_PROXY/ALL_PROXY (and .netrc)
        # from sending the requests, document text included, anywhere else.
        self.proxy = proxy if proxy is not None else os.environ.get(PROXY_ENV) or None
        # The key is passed explicitly so openai never falls back to OPENAI_API_KEY; with no key,
        # no Authorization header is sent at all (local servers need none).
        self._client = _OpenAI(
            api_key=self.api_key or "no-key",
            base_url=self.base_url,
            timeout=timeout,
            max_retries=max_retries,
            # openai's own client follows redirects: a 307/308 would send the POST (the prompt)
            # again to whatever host the endpoint names. Not followed: see _describe.
            http_client=openai.DefaultHttpxClient(
                timeout=timeout,
                follow_redirects=False,
                trust_env=False,
                # the proxy lives in the transport (a client-level proxy would mount another)
                transport=_BoundedTransport(
                    total_s=timeout,
                    max_bytes=max_answer_bytes,
                    verify=_verify(),
                    trust_env=False,
                    proxy=self.proxy,
                    limits=httpx2.Limits(max_connections=1000, max_keepalive_connections=100),
                ),
            ),
        )
        self._client.backoff_s = backoff_s
        # openai reads OPENAI_ORG_ID / OPENAI_PROJECT_ID into headers it would send to any
        # endpoint; a teacher gets only what is configured here.
        self._client.organization = None
        self._client.project = None

    # ---------------------------------------------------------------- accounting

    def usage(self) -> dict[str, Any]:
        """Requests, cache hits, tokens and cost so far, as a plain dict for run metadata.

        `cost` is in the unit of the prices given (per 1k tokens, for this model); without
        prices it is 0 and `cost_known` is False. Cache hits cost nothing and their tokens are
        counted apart, in `cached_total_tokens`.
        """
        with self._lock:
            out: dict[str, Any] = {"model": self.model, "base_url": self.base_url, **self._usage}
        pp, pc = self.prices
        out["price_per_1k_prompt_tokens"] = pp
        out["price_per_1k_completion_tokens"] = pc
        out["cost_known"] = pp is not None
        out["cost"] = (
            0.0
            if pp is None
            else round(out["prompt_tokens"] / 1000 * pp + out["completion_tokens"] / 1000 * pc, 9)
        )
        return out

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for k, v in deltas.items():
                self._usage[k] += v

    # ---------------------------------------------------------------- requests

    def _describe(self, exc: openai.OpenAIError) -> str:
        where = f"{self.base_url}/chat/completions"
        if isinstance(exc, openai.APIStatusError) and 300 <= exc.status_code < 400:
            # Not followed (the request holds document text); no body is quoted.
            target = exc.response.headers.get("location", "")[:200] or "no Location"
            return (
                f"HTTP {exc.status_code} redirect from {where} to {target}: redirects are not "
                "followed (the request carries document text); set the teacher URL to the "
                "endpoint that answers itself (--teacher-url, --llm-url)"
            )
        if isinstance(exc, openai.APIStatusError):
            body = exc.response.text[:300]
            retried = exc.status_code in (408, 409, 429) or exc.status_code >= 500
            tries = f" (after {self.max_retries} retries)" if retried else ""
            return f"HTTP {exc.status_code} from {where}{tries}: {body}"
        if isinstance(exc, openai.APITimeoutError):
            return (
                f"no complete answer from {where} within {self.timeout}s (the whole request), "
                f"after {self.max_retries} retries"
            )
        if _too_large(exc) is not None:
            return (
                f"{where} answered more than {self.max_answer_bytes} bytes (max_answer_bytes), "
                f"after {self.max_retries} retries; a chat answer is far smaller: check the "
                "teacher URL"
            )
        if isinstance(exc, openai.APIConnectionError):
            return f"cannot reach {where} after {self.max_retries} retries: {exc.__cause__ or exc}"
        return f"{where}: {type(exc).__name__}: {exc}"

    def _send(
        self,
        messages: Sequence[Mapping[str, Any]],
        response_format: Mapping[str, Any] | None,
        params: Mapping[str, Any],
    ) -> dict[str, Any]:
        """One answered request: {"content", "usage"} from the cache or the endpoint."""
        key = request_key(self.model, messages, response_format, params)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None and isinstance(hit.get("content"), str):  # else asked again
                usage = hit.get("usage")
                tokens = _token_count(usage.get("total_tokens") if isinstance(usage, dict) else 0)
                self._count(cache_hits=1, cached_total_tokens=tokens)
                return hit
        if self.limiter is not None:
            self.limiter.wait()
        kwargs = dict(params)
        if not self.api_key:
            kwargs["extra_headers"] = {
                **kwargs.get("extra_headers", {}),
                "Authorization": openai.Omit(),
            }
        if response_format is not None:
            kwargs["response_format"] = response_format
        try:
            completion = self._client.chat.completions.create(
                model=self.model, messages=list(messages), **kwargs
            )
        except openai.OpenAIError as exc:
            self._count(failures=1)
            status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
            raise TeacherError(self._describe(exc), status_code=status) from exc
        except json.JSONDecodeError as exc:  # a JSON content type with a body that is not JSON
            self._count(failures=1)
            raise TeacherError(
                f"{self.base_url}/chat/completions answered a body that is not JSON: {exc}"
            ) from exc
        except (ValueError, TypeError) as exc:  # a body not UTF-8, a JSON of another shape
            self._count(failures=1)
            raise TeacherError(
                f"{self.base_url}/chat/completions answered a body that cannot be read as a chat "
                f"completion: {type(exc).__name__}: {str(exc)[:200]}"
            ) from exc
        try:
            choice = completion.choices[0]
            content = choice.message.content
        except (AttributeError, IndexError, TypeError):
            self._count(failures=1)
            raise TeacherError(
                f"{self.base_url}/chat/completions answered without choices[0].message.content: "
                f"{str(completion)[:300]}"
            ) from None
        if content is None:
            self._count(failures=1)
            raise TeacherError(
                f"{self.base_url}/chat/completions answered choices[0].message.content=null "
                f"(finish_reason={getattr(choice, 'finish_reason', None)!r})"
            )
        if not isinstance(content, str):
            self._count(failures=1)
            raise TeacherError(
                f"{self.base_url}/chat/completions answered choices[0].message.content of type "
                f"{type(content).__name__} ({str(content)[:100]!r}), not a string; point the "
                "teacher URL at an OpenAI-compatible endpoint that answers text"
            )
        try:  # a lone surrogate (JSON "\ud800") is no text: it could not be stored
            content.encode("utf-8")
        except UnicodeEncodeError as exc:
            self._count(failures=1)
            raise TeacherError(
                f"{self.base_url}/chat/completions: the answer is not valid Unicode ({exc.reason} "
                f"at character {exc.start}); not kept or cached"
            ) from None
        u = completion.usage
        usage = {  # accounting only: a value that is not a count is read as 0, never an error
            name: _token_count(getattr(u, name, 0))
            for name in ("prompt_tokens", "completion_tokens", "total_tokens")
        }
        self._count(requests=1, **usage)
        model = completion.model if isinstance(completion.model, str) else None
        entry = {"content": content, "usage": usage, "model": model or self.model}
        if self.cache is not None:
            self.cache.put(key, entry)
        return entry

    def chat(
        self, messages: list[dict[str, Any]], *, items: Iterable[Any] = (), **params: Any
    ) -> str:
        """Send chat messages and return the first choice's content.

        `items`: the records (pages, images, tables) whose content is in `messages`; if any may
        not be sent (its `training_allowed` is not the boolean true, or the client's `consent`
        ledger opted it out), TeacherError is raised and nothing is sent.
        `params` go to the endpoint as they are (temperature, max_tokens, seed, extra_body, ...).
        """
        check_send_allowed(items, self.consent)
        return self._send(messages, None, params)["content"]

    # ---------------------------------------------------------------- structured output

    def _json_schema_key(self) -> str:
        """Cache key of this endpoint's refusal of a json_schema response_format for this model."""
        cap = {"capability": "json_schema", "base_url": self.base_url, "model": self.model}
        canon = json.dumps(cap, sort_keys=True)
        return hashlib.sha256(canon.encode("utf-8")).hexdigest()

    def _json_schema_usable(self) -> bool:
        if self.json_schema is None and self.cache is not None:
            hit = self.cache.get(self._json_schema_key())
            if hit is not None and hit.get("json_schema_refused"):
                self.json_schema = False
        return self.json_schema is not False

    def chat_json(
        self,
        messages: list[dict[str, Any]],
        schema: type[BaseModel],
        *,
        items: Iterable[Any] = (),
        **params: Any,
    ) -> BaseModel:
        """Ask for an answer matching a pydantic model; return the validated model instance.

        The model's JSON schema goes in `response_format` (json_schema) where the endpoint
        accepts it; where it refuses (HTTP 400/422), the schema goes in a system message instead,
        and the refusal is remembered (in the cache too, so a rerun does not ask again). An answer
        that does not validate gets one repair retry (the errors sent back); a second failure
        raises TeacherSchemaError.
        """
        if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise TypeError(
                f"chat_json schema {schema!r} must be a pydantic BaseModel subclass "
                "(its model_json_schema() is sent and its validation is used)"
            )
        check_send_allowed(items, self.consent)
        name = re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64]
        json_schema = json.loads(_schema_json(schema))  # a fresh dict per request
        fmt = {"type": "json_schema", "json_schema": {"name": name, "schema": json_schema}}

        use_format = self._json_schema_usable()
        convo = list(messages)
        refused: TeacherError | None = None
        if use_format:
            try:
                answer = self._send(convo, fmt, params)
            except TeacherError as exc:
                if exc.status_code not in _SCHEMA_REJECTED:
                    raise
                use_format, refused = False, exc
        if not use_format:
            instruction = (
                "Answer with a single JSON object only (no prose, no code fences) that validates "
                f"against this JSON schema:\n{json.dumps(json_schema, sort_keys=True)}"
            )
            convo = [{"role": "system", "content": instruction}, *messages]
            answer = self._send(convo, None, params)
            if refused is not None:
                # The same request without response_format was answered: the endpoint refuses
                # json_schema (not the request). Remember it, on disk too.
                self.json_schema = False
                if self.cache is not None:
                    entry = {"json_schema_refused": str(refused)[:300]}
                    self.cache.put(self._json_schema_key(), entry)
        fmt_used = fmt if use_format else None

        content = answer["content"]
        try:
            return schema.model_validate_json(_strip_fences(content))
        except ValidationError as exc:
            first_errors = str(exc)
        self._count(repairs=1)
        repair = [
            *convo,
            {"role": "assistant", "content": content},
            {
                "role": "user",
                "content": (
                    "That answer is not valid JSON for the schema:\n"
                    f"{first_errors[:2000]}\n"
                    "Answer again with the corrected JSON object only."
                ),
            },
        ]
        content2 = self._send(repair, fmt_used, params)["content"]
        try:
            return schema.model_validate_json(_strip_fences(content2))
        except ValidationError as exc:
            raise TeacherSchemaError(
                f"teacher {self.model} at {self.base_url} answered JSON that does not match "
                f"schema {name} twice (after one repair retry): {str(exc)[:500]}; "
                f"answer began {content2[:200]!r}",
                content=content2,
                errors=str(exc),
            ) from exc
