"""The teacher client (common.teacher) against a fake OpenAI-compatible server on loopback.

The server (tests/synth/fake_teacher.py) records every request and answers from a script: good
answers, 429 and 500 (retried), a slow answer (timeout, retried), malformed JSON (repaired or
rejected), a refused json_schema response_format, and vision requests.
"""

from __future__ import annotations

import base64
import io
import json
import threading
import time

import pytest
from PIL import Image
from pydantic import BaseModel

from common.teacher import (
    TeacherClient,
    TeacherError,
    TeacherSchemaError,
    image_content,
    request_key,
    send_allowed,
    user_message,
)
from tests.synth import fake_teacher

server = fake_teacher.server  # the fake endpoint (a pytest fixture; test_tables imports it here)

pytestmark = pytest.mark.timeout(60)


class QA(BaseModel):
    question: str
    answer: float


GOOD_QA = '{"question": "What is the largest bar?", "answer": 42}'


def _client(server, **kw) -> TeacherClient:
    kw.setdefault("timeout", 5)
    kw.setdefault("backoff_s", 0.01)
    return TeacherClient(server["base_url"], "tiny", **kw)


HI = [{"role": "user", "content": "hi"}]


def test_good_answer_key_from_env_and_usage(server, monkeypatch):
    monkeypatch.setenv("REFINERY_TEACHER_API_KEY", "sekrit")
    monkeypatch.setenv("OPENAI_API_KEY", "must-not-be-used")
    client = _client(server, price_per_1k_prompt_tokens=2.0, price_per_1k_completion_tokens=10.0)
    assert client.chat(HI, temperature=0, max_tokens=5) == "hello"
    assert client.chat(HI, temperature=1) == "hello"
    req = server["requests"][0]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer sekrit"
    assert req["body"]["model"] == "tiny" and req["body"]["max_tokens"] == 5
    u = client.usage()
    assert (u["requests"], u["cache_hits"], u["failures"]) == (2, 0, 0)
    assert (u["prompt_tokens"], u["completion_tokens"], u["total_tokens"]) == (22, 14, 36)
    assert u["cost"] == pytest.approx(22 / 1000 * 2.0 + 14 / 1000 * 10.0) and u["cost_known"]
    assert u["model"] == "tiny"
    json.dumps(u)  # a plain dict for metadata


def test_no_key_sends_no_authorization_and_no_prices_means_no_cost(server, monkeypatch):
    monkeypatch.delenv("REFINERY_TEACHER_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "must-not-be-used")
    client = _client(server)
    assert client.chat(HI) == "hello"
    assert server["requests"][0]["auth"] is None
    u = client.usage()
    assert u["cost"] == 0 and u["cost_known"] is False


def test_openai_environment_is_never_used_or_sent(server, monkeypatch):
    leaks = {
        "OPENAI_API_KEY": "api-leak",
        "OPENAI_ADMIN_KEY": "admin-leak",
        "OPENAI_ORG_ID": "org-leak",
        "OPENAI_PROJECT_ID": "project-leak",
        "OPENAI_BASE_URL": "http://127.0.0.9:1/v1",
    }
    for k, v in leaks.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("REFINERY_TEACHER_API_KEY", "the-teacher-key")
    assert _client(server).chat(HI) == "hello"  # sent to the given URL, not OPENAI_BASE_URL
    headers = server["requests"][0]["headers"]
    assert headers["authorization"] == "Bearer the-teacher-key"
    assert headers["user-agent"].startswith("Refinery-teacher openai-python/")
    sent = json.dumps(headers).lower()
    assert not any(v.lower() in sent for v in leaks.values()), headers
    assert "openai-organization" not in sent and "openai-project" not in sent


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_status_is_retried(server, status):
    server["script"] = [status, ("ok", "after retry")]
    client = _client(server)
    assert client.chat(HI) == "after retry"
    assert len(server["requests"]) == 2
    assert client.usage()["requests"] == 1


def test_backoff_s_sets_the_first_wait(server, monkeypatch):
    """The waits openai's retry loop sleeps (recorded, not timed): backoff_s, then doubling."""
    import openai._base_client as base

    waits: list[float] = []
    monkeypatch.setattr(base.time, "sleep", waits.append)
    server["script"] = [500, 500]
    assert _client(server, backoff_s=0.4).chat(HI) == "hello"
    slow, waits[:] = list(waits), []
    server["script"] = [500, 500]
    assert _client(server, backoff_s=0.0).chat(HI) == "hello"
    assert len(server["requests"]) == 6
    # openai's jitter takes off up to 25% of each step
    assert len(slow) == 2 and 0.3 <= slow[0] <= 0.4 and 0.6 <= slow[1] <= 0.8, slow
    assert waits == [0.0, 0.0]


def test_timeout_is_retried(server):
    server["script"] = [("sleep", 1.5), ("ok", "in time")]
    client = _client(server, timeout=0.5)
    assert client.chat(HI) == "in time"
    assert len(server["requests"]) == 2


def test_retries_give_up_with_a_typed_error(server):
    server["script"] = [500, 500, 500]
    client = _client(server, max_retries=2)
    with pytest.raises(TeacherError, match=r"HTTP 500 .*after 2 retries") as info:
        client.chat(HI)
    assert info.value.status_code == 500
    assert len(server["requests"]) == 3 and client.usage()["failures"] == 1


def test_client_error_is_not_retried(server):
    server["script"] = [401]
    with pytest.raises(TeacherError, match="HTTP 401") as info:
        _client(server).chat(HI)
    assert info.value.status_code == 401 and len(server["requests"]) == 1


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b'{"choices": [{"message": {"role": "assist', "not JSON"),
        (b'{"choices": []}', "without choices"),
        (b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": null}}]}', "null"),
        (
            b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": 123}}]}',
            "content of type int .* not a string; point the teacher URL",
        ),
        (
            b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": '
            b'[{"type": "text", "text": "x"}]}}]}',
            "content of type list",
        ),
    ],
)
def test_broken_response_body_is_a_typed_error(server, tmp_path, body, error):
    server["script"] = [("raw", body)]
    client = _client(server, cache_dir=tmp_path)
    with pytest.raises(TeacherError, match=error):
        client.chat(HI)
    assert client.usage()["failures"] == 1
    assert client.chat(HI) == "hello"  # nothing broken was cached
    assert len(server["requests"]) == 2


@pytest.fixture
def elsewhere():
    """Another loopback server (127.0.0.64) nobody configured as the teacher: records every
    request (GET/POST, the path as sent: absolute when it is asked as a proxy) and answers a
    completion saying "from elsewhere". Stops by itself after 60 s if the test does not."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    hits: list[tuple[str, str, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            hits.append((self.command, self.path, body))
            data = json.dumps(fake_teacher.completion("from elsewhere")).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST

    httpd = ThreadingHTTPServer(("127.0.0.64", 0), Handler)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    watchdog = threading.Timer(60, httpd.shutdown)
    watchdog.daemon = True
    watchdog.start()
    yield {"base": f"http://127.0.0.64:{httpd.server_address[1]}", "hits": hits}
    watchdog.cancel()
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_never_followed(server, elsewhere, status):
    """openai's httpx client followed redirects: a 307/308 from the endpoint sent the POST (the
    document text) again to whatever host it named, a 301-303 a GET."""
    target = f"{elsewhere['base']}/internal/admin"
    server["script"] = [("redirect", (status, target))]
    client = _client(server, max_retries=2)
    with pytest.raises(TeacherError) as info:
        client.chat([{"role": "user", "content": "document text"}])
    assert elsewhere["hits"] == []
    assert len(server["requests"]) == 1  # refused, not retried
    message = str(info.value)
    assert info.value.status_code == status and "\n" not in message
    assert f"{server['base_url']}/chat/completions" in message and target in message
    assert "not followed" in message and "--teacher-url" in message
    assert "moved-body" not in message  # no body is quoted
    assert client.usage()["failures"] == 1


def test_proxies_in_the_environment_are_not_used(server, elsewhere, monkeypatch):
    """httpx's trust_env read HTTP(S)_PROXY/ALL_PROXY: the requests went to whatever proxy the
    environment named."""
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, elsewhere["base"])
    monkeypatch.delenv("REFINERY_TEACHER_PROXY", raising=False)
    assert _client(server).chat(HI) == "hello"
    assert elsewhere["hits"] == [] and len(server["requests"]) == 1


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_a_configured_proxy_is_used(server, elsewhere, monkeypatch, how):
    monkeypatch.delenv("REFINERY_TEACHER_PROXY", raising=False)
    if how == "environment":
        monkeypatch.setenv("REFINERY_TEACHER_PROXY", elsewhere["base"])
        client = _client(server)
    else:
        client = _client(server, proxy=elsewhere["base"])
    assert client.chat(HI) == "from elsewhere"
    ((method, path, _),) = elsewhere["hits"]
    assert (method, path) == ("POST", f"{server['base_url']}/chat/completions")
    assert server["requests"] == []


def test_unreachable_endpoint_is_a_typed_error():
    client = TeacherClient("http://127.0.0.63:9/v1", "tiny", timeout=1, max_retries=1, backoff_s=0)
    with pytest.raises(TeacherError, match="cannot reach"):
        client.chat(HI)


def test_cache_makes_a_rerun_send_nothing(server, tmp_path):
    msgs = [HI, [{"role": "user", "content": "two"}], [{"role": "user", "content": "three"}]]
    first = _client(server, cache_dir=tmp_path / "cache")
    answers = [first.chat(m, temperature=0) for m in msgs]
    assert len(server["requests"]) == 3
    server["default"] = ("ok", "a different answer")  # the endpoint changed its mind
    rerun = _client(server, cache_dir=tmp_path / "cache")
    assert [rerun.chat(m, temperature=0) for m in msgs] == answers
    assert len(server["requests"]) == 3  # nothing sent
    u = rerun.usage()
    assert (u["requests"], u["cache_hits"], u["total_tokens"]) == (0, 3, 0)
    assert u["cached_total_tokens"] == 3 * 18
    # any change to the request is a new key: params, messages, model
    assert rerun.chat(HI, temperature=0.5) == "a different answer"
    assert len(server["requests"]) == 4
    keys = {
        request_key("tiny", HI, None, {"temperature": 0}),
        request_key("tiny", HI, None, {"temperature": 0.5}),
        request_key("other", HI, None, {"temperature": 0}),
        request_key("tiny", [{"role": "user", "content": "hi!"}], None, {"temperature": 0}),
    }
    assert len(keys) == 4
    # the key is canonical: parameter order does not matter
    assert request_key("tiny", HI, None, {"a": 1, "b": 2}) == request_key(
        "tiny", HI, None, {"b": 2, "a": 1}
    )
    stored = {p.stem for p in (tmp_path / "cache").rglob("*.json")}
    sent = [(m, {"temperature": 0}) for m in msgs] + [(HI, {"temperature": 0.5})]
    assert stored == {request_key("tiny", m, None, p) for m, p in sent}


def test_failures_are_not_cached(server, tmp_path):
    server["script"] = [400]
    client = _client(server, cache_dir=tmp_path)
    with pytest.raises(TeacherError):
        client.chat(HI)
    assert client.chat(HI) == "hello"
    assert len(server["requests"]) == 2


def test_opted_out_item_is_never_sent(server):
    client = _client(server)
    ok = {"id": "img-1", "training_allowed": True}
    banned = {"id": "img-2", "training_allowed": False}
    unknown = {"pair_id": "p-3"}
    with pytest.raises(TeacherError, match="img-2.*training_allowed=False"):
        client.chat(HI, items=[ok, banned])
    with pytest.raises(TeacherError, match="p-3.*training_allowed missing or null"):
        client.chat_json(HI, QA, items=[unknown])
    with pytest.raises(TeacherError, match="x/a.png.*missing or null"):
        client.chat(HI, items=[{"url": "http://x/a.png", "training_allowed": None}])
    assert server["requests"] == []
    assert client.chat(HI, items=[ok]) == "hello"
    assert len(server["requests"]) == 1
    assert send_allowed(ok) and not send_allowed(banned) and not send_allowed(unknown)
    assert not send_allowed({"training_allowed": 1})  # only True is consent

    class Row:
        training_allowed = False
        id = "row-9"

    assert not send_allowed(Row())
    with pytest.raises(TeacherError, match="row-9"):
        client.chat(HI, items=[Row()])
    assert len(server["requests"]) == 1


def test_structured_output_with_json_schema(server):
    server["default"] = ("ok", GOOD_QA)
    client = _client(server)
    qa = client.chat_json(HI, QA, temperature=0)
    assert isinstance(qa, QA) and qa.answer == 42
    body = server["requests"][0]["body"]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "QA"
    assert body["response_format"]["json_schema"]["schema"] == QA.model_json_schema()
    assert client.usage()["repairs"] == 0


def test_malformed_json_is_repaired_once(server):
    server["script"] = [("ok", '{"question": "What is the largest bar?", "answer": "lots"')]
    server["default"] = ("ok", "```json\n" + GOOD_QA + "\n```")  # fences are tolerated
    client = _client(server)
    assert client.chat_json(HI, QA).answer == 42
    assert len(server["requests"]) == 2
    repair = server["requests"][1]["body"]["messages"]
    assert repair[:-2] == HI and repair[-2]["role"] == "assistant"
    assert "not valid JSON" in repair[-1]["content"]
    assert "response_format" in server["requests"][1]["body"]
    assert client.usage()["repairs"] == 1


def test_malformed_json_twice_is_a_typed_error(server):
    server["default"] = ("ok", '{"question": "q", "answer": "not a number"}')
    client = _client(server)
    with pytest.raises(TeacherSchemaError, match="schema QA twice") as info:
        client.chat_json(HI, QA)
    assert isinstance(info.value, TeacherError) and "answer" in info.value.errors
    assert info.value.content.startswith('{"question"')
    assert len(server["requests"]) == 2  # exactly one repair retry


def test_refused_response_format_falls_back_to_the_prompt_and_is_remembered(server, tmp_path):
    server["default"] = ("ok", GOOD_QA)
    server["script"] = [("reject_format", 400), ("reject_format", 400)]
    client = _client(server, cache_dir=tmp_path)
    assert client.chat_json(HI, QA).answer == 42
    sent = [r["body"] for r in server["requests"]]
    assert len(sent) == 2 and "response_format" in sent[0] and "response_format" not in sent[1]
    assert sent[1]["messages"][0]["role"] == "system"
    assert '"answer"' in sent[1]["messages"][0]["content"]  # the schema is in the prompt
    # the same client does not probe again
    other = [{"role": "user", "content": "another chart"}]
    assert client.chat_json(other, QA).answer == 42
    assert len(server["requests"]) == 3 and "response_format" not in server["requests"][2]["body"]
    # a rerun from the cache sends nothing, not even the refused probe
    rerun = _client(server, cache_dir=tmp_path)
    assert rerun.chat_json(HI, QA).answer == 42
    assert rerun.chat_json(other, QA).answer == 42
    assert len(server["requests"]) == 3


def test_a_bad_request_is_not_taken_for_a_refused_response_format(server, tmp_path):
    server["script"] = [400, 400]  # the request itself is bad, with or without response_format
    server["default"] = ("ok", GOOD_QA)
    client = _client(server, cache_dir=tmp_path)
    with pytest.raises(TeacherError, match="HTTP 400"):
        client.chat_json(HI, QA)
    assert len(server["requests"]) == 2 and client.json_schema is None
    assert list(tmp_path.rglob("*.json")) == []
    assert client.chat_json(HI, QA).answer == 42
    assert "response_format" in server["requests"][2]["body"]


def test_structured_output_cache_rerun_sends_nothing(server, tmp_path):
    server["script"] = [("ok", "not json at all")]
    server["default"] = ("ok", GOOD_QA)
    assert _client(server, cache_dir=tmp_path).chat_json(HI, QA).answer == 42
    assert len(server["requests"]) == 2
    assert _client(server, cache_dir=tmp_path).chat_json(HI, QA).answer == 42
    assert len(server["requests"]) == 2


def _png(colour=(200, 30, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 6), colour).save(buf, format="PNG")
    return buf.getvalue()


def test_vision_request_carries_images_as_data_urls(server, tmp_path):
    png = _png()
    jpg_path = tmp_path / "b.jpg"
    Image.new("RGB", (5, 5), (0, 90, 0)).save(jpg_path, format="JPEG")
    msg = user_message("Describe both images.", [png, jpg_path], detail="low")
    item = {"id": "pair-1", "training_allowed": True}
    assert _client(server).chat([msg], items=[item]) == "hello"
    content = server["requests"][0]["body"]["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "Describe both images."}
    urls = [part["image_url"]["url"] for part in content[1:]]
    assert urls[0].startswith("data:image/png;base64,")
    assert urls[1].startswith("data:image/jpeg;base64,")
    assert base64.b64decode(urls[0].split(",", 1)[1]) == png
    assert base64.b64decode(urls[1].split(",", 1)[1]) == jpg_path.read_bytes()
    assert content[1]["image_url"]["detail"] == "low"
    assert user_message("text only") == {"role": "user", "content": "text only"}


def test_image_helpers_reject_what_is_not_an_image(tmp_path):
    with pytest.raises(ValueError, match="not PNG, JPEG, GIF or WEBP"):
        image_content(b"<html>not an image</html>")
    with pytest.raises(ValueError, match="does not exist"):
        image_content(tmp_path / "missing.png")
    with pytest.raises(ValueError, match="detail"):
        image_content(_png(), detail="ultra")


def test_rate_limit_spaces_requests(server):
    client = _client(server, requests_per_s=20)  # a slot every 50 ms
    threads = [threading.Thread(target=client.chat, args=(HI,)) for _ in range(6)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert time.monotonic() - t0 >= 5 * 0.05 - 0.005  # six starts span five intervals
    assert len(server["requests"]) == 6


def test_rate_limiter_grants_evenly_spaced_slots_across_threads(monkeypatch):
    """The slots themselves, on a clock the test owns (arrival times at a server depend on the
    machine's load, the slots do not): every start waits until its own slot, 50 ms apart."""
    import common.teacher as teacher

    wakes: list[float] = []
    lock = threading.Lock()

    def sleep(s: float) -> None:
        with lock:
            wakes.append(100.0 + s)  # the clock stands at 100.0: the wait ends at the slot

    monkeypatch.setattr(teacher.time, "monotonic", lambda: 100.0)
    monkeypatch.setattr(teacher.time, "sleep", sleep)
    limiter = teacher.RateLimiter(20)  # a slot every 50 ms
    threads = [threading.Thread(target=limiter.wait) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for _ in range(4):
        limiter.wait()
    # the first start is at once; the other nine wait for slots 50 ms apart, none shared
    assert sorted(wakes) == pytest.approx([100.0 + 0.05 * k for k in range(1, 10)])


def test_bad_configuration_fails_clearly():
    with pytest.raises(ValueError, match="http"):
        TeacherClient("127.0.0.1:8000", "tiny")
    with pytest.raises(ValueError, match="model"):
        TeacherClient("http://127.0.0.1:8000/v1", "")
    with pytest.raises(ValueError, match="both"):
        TeacherClient("http://127.0.0.1:8000/v1", "m", price_per_1k_prompt_tokens=1.0)
    with pytest.raises(ValueError, match="requests/s"):
        TeacherClient("http://127.0.0.1:8000/v1", "m", requests_per_s=-1)
    with pytest.raises(TypeError, match="pydantic"):
        TeacherClient("http://127.0.0.1:8000/v1", "m").chat_json(HI, dict)


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": "lots", "completion_tokens": 2, "total_tokens": 2},
        {"prompt_tokens": 1e30, "completion_tokens": -5, "total_tokens": "x"},
        {"prompt_tokens": None, "completion_tokens": [1], "total_tokens": {"a": 1}},
    ],
)
def test_usage_that_is_not_a_count_is_read_as_zero(server, tmp_path, usage):
    """Usage is accounting: garbage there must not turn a good answer into a crash."""
    body = dict(fake_teacher.completion(GOOD_QA), usage=usage)
    server["script"] = [("raw", json.dumps(body).encode())]
    client = _client(server, cache_dir=tmp_path)
    assert client.chat_json(HI, QA).answer == 42
    u = client.usage()
    assert (u["requests"], u["failures"], u["prompt_tokens"]) == (1, 0, 0)
    assert u["completion_tokens"] == (2 if usage["completion_tokens"] == 2 else 0)
    assert _client(server, cache_dir=tmp_path).chat_json(HI, QA).answer == 42  # cached
    assert len(server["requests"]) == 1


def test_a_teacher_behind_a_private_ca_is_reached_through_ssl_cert_file(tmp_path, monkeypatch):
    """trust_env=False (no proxy from the environment) also stopped httpx reading SSL_CERT_FILE:
    an HTTPS teacher whose certificate a private CA signed could not be reached at all. The CA
    bundle SSL_CERT_FILE names is used; without it the certificate is refused."""
    import ssl
    import subprocess
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    host = "127.0.0.65"

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=tmp_path, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
            "ca.pem", "-days", "2", "-subj", "/CN=refinery-test-ca")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr",
            "-subj", f"/CN={host}")  # fmt: skip
    (tmp_path / "san.ext").write_text(f"subjectAltName=IP:{host}\n")
    openssl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "srv.pem", "-days", "2", "-extfile", "san.ext")  # fmt: skip

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            data = json.dumps(fake_teacher.completion("over tls")).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer((host, 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "srv.pem", tmp_path / "srv.key")
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    watchdog = threading.Timer(60, httpd.shutdown)
    watchdog.daemon = True
    watchdog.start()
    url = f"https://{host}:{httpd.server_address[1]}/v1"
    try:
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        with pytest.raises(TeacherError):
            TeacherClient(url, "tiny", timeout=5, max_retries=0).chat(HI)
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
        assert TeacherClient(url, "tiny", timeout=5, max_retries=0).chat(HI) == "over tls"
    finally:
        watchdog.cancel()
        httpd.shutdown()
        httpd.server_close()


# ------------------------------------------------------------------ answers a run cannot keep


def _raw_completion(content_json: str) -> bytes:
    """A chat.completion body whose content is `content_json`, a JSON string literal as sent."""
    return (
        b'{"id":"x","object":"chat.completion","created":0,"model":"tiny","choices":[{"index":0,'
        b'"finish_reason":"stop","message":{"role":"assistant","content":'
        + content_json.encode()
        + b"}}]}"
    )


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (_raw_completion('"a red \\ud800 square"'), "not valid Unicode"),  # a lone surrogate
        (_raw_completion('"tail \\udc80"'), "not valid Unicode"),
        (b'{"choices":[{"message":{"content":"\xff\xfe"}}]}', "cannot be read"),  # not UTF-8
    ],
)
def test_an_answer_that_is_not_unicode_is_a_typed_error_never_cached(server, tmp_path, body, error):
    """A lone surrogate went back to the stage (and the cache's write raised UnicodeEncodeError);
    a body not UTF-8 raised UnicodeDecodeError: either ended the whole run."""
    server["script"] = [("raw", body)]
    client = _client(server, cache_dir=tmp_path, max_retries=0)
    with pytest.raises(TeacherError, match=error):
        client.chat(HI)
    assert client.usage()["failures"] == 1
    assert list(tmp_path.rglob("*.json")) == []  # nothing unusable was cached
    assert client.chat(HI) == "hello"


def _drip_server(host: str, head: bytes, body: bytes, every_s: float, what: str) -> str:
    """A one-request server that sends `head` then `body`, dripping `what` ("head" or "body") a
    byte every `every_s` seconds; stops by itself when the client hangs up or after 20 s."""
    import socket

    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, 0))
    srv.listen(1)
    srv.settimeout(20)

    def serve():
        try:
            conn, _ = srv.accept()
        except OSError:
            srv.close()
            return
        conn.settimeout(20)
        try:
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += conn.recv(65536)
            head_in, rest = buf.split(b"\r\n\r\n", 1)
            length = [h for h in head_in.split(b"\r\n") if h.lower().startswith(b"content-length")]
            need = int(length[0].split(b":")[1])
            while len(rest) < need:
                rest += conn.recv(65536)
            slow, fast = (head, body) if what == "head" else (body, head)
            if what == "body":
                conn.sendall(fast)
            for i in range(len(slow)):
                conn.sendall(slow[i : i + 1])
                time.sleep(every_s)
            if what == "head":
                conn.sendall(fast)
        except OSError:
            pass  # the client hung up: the point
        finally:
            conn.close()
            srv.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://{host}:{srv.getsockname()[1]}/v1"


@pytest.mark.parametrize("what", ["body", "head"])
def test_a_dripped_answer_is_cut_at_the_whole_request_timeout(what):
    """httpx's timeout is per read: an answer dripped a byte every 0.9 s came back after 13.6 s
    with timeout=2. Now `timeout` bounds the whole request, headers or body dripped."""
    body = json.dumps(fake_teacher.completion("hi")).encode()
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % (
        len(body)
    )
    url = _drip_server("127.0.0.66", head, body, 0.1, what)  # 2-4 s in all, 0.1 s a read
    client = TeacherClient(url, "tiny", timeout=0.8, max_retries=0)
    t0 = time.monotonic()
    with pytest.raises(TeacherError, match=r"no complete answer .* within 0.8s \(the whole"):
        client.chat(HI)
    assert time.monotonic() - t0 < 1.6
    assert client.usage()["failures"] == 1


def test_an_answer_larger_than_the_cap_is_a_typed_error(server):
    big = json.dumps(fake_teacher.completion("x" * 300_000)).encode()
    server["script"] = [("raw", big), ("raw", big)]
    client = _client(server, max_retries=1, max_answer_bytes=100_000)
    with pytest.raises(TeacherError, match=r"more than 100000 bytes \(max_answer_bytes\)"):
        client.chat(HI)
    assert len(server["requests"]) == 2  # one retry, then given up
    assert client.chat(HI) == "hello"  # the next request has a budget of its own
    assert _client(server).chat(HI, max_tokens=1) == "hello"  # the default cap is far larger
    with pytest.raises(ValueError, match="max_answer_bytes"):
        _client(server, max_answer_bytes=0)
    with pytest.raises(ValueError, match="timeout"):
        _client(server, timeout=float("inf"))
