"""The teacher client and the optional LLM extraction path, against a fake endpoint on loopback."""

from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.schemas import OUTPUTS
from common.teacher import TeacherClient, TeacherError
from crawlers.extract import ExtractConfig, extract_page
from crawlers.extract.llm import LLMExtractor

from .pages import article

pytestmark = pytest.mark.timeout(60)

ANSWER = "# Otters\n\n- Otters eat **fish**.\n\n| a | b |\n|---|---|\n| 1 | 2 |"


@pytest.fixture
def endpoint():
    """A fake OpenAI-compatible server; `script` is the list of statuses to answer in turn."""
    state = {"script": [], "requests": [], "answer": ANSWER}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state["requests"].append(
                {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
            )
            status = state["script"].pop(0) if state["script"] else 200
            payload = (
                {"choices": [{"message": {"role": "assistant", "content": state["answer"]}}]}
                if status == 200
                else {"error": "busy"}
            )
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.62", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state["base_url"] = f"http://127.0.0.62:{httpd.server_address[1]}/v1"
    yield state
    httpd.shutdown()
    httpd.server_close()


def test_chat_retries_transient_errors_then_returns_content(endpoint):
    endpoint["script"] = [503, 429]
    client = TeacherClient(endpoint["base_url"], "tiny", api_key="k", timeout=5, backoff_s=0.01)
    assert client.chat([{"role": "user", "content": "hi"}], temperature=0) == ANSWER
    assert len(endpoint["requests"]) == 3
    req = endpoint["requests"][-1]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer k"
    assert req["body"]["model"] == "tiny" and req["body"]["temperature"] == 0


def test_chat_fails_clearly_on_a_client_error(endpoint):
    endpoint["script"] = [400]
    client = TeacherClient(endpoint["base_url"], "tiny", timeout=5, backoff_s=0.01)
    with pytest.raises(TeacherError, match="HTTP 400"):
        client.chat([{"role": "user", "content": "hi"}])
    assert len(endpoint["requests"]) == 1  # a 4xx is not retried


def test_llm_path_replaces_extraction_for_configured_hosts_only(endpoint):
    client = TeacherClient(endpoint["base_url"], "tiny", timeout=5)
    llm = LLMExtractor(client, ["docs.127.0.0.9.example", "127.0.0.9"])
    cfg = ExtractConfig(llm=llm)
    rec = {
        "url": "http://127.0.0.9/a",
        "status": 200,
        "body": article().encode(),
        "training_allowed": True,
    }
    doc = extract_page(rec, cfg).document
    assert doc["extraction_method"] == "llm" and doc["markdown"] == ANSWER
    assert "Otters eat fish." in doc["text"] and "**" not in doc["text"]
    sent = endpoint["requests"][0]["body"]["messages"][1]["content"]
    assert "semi-aquatic" in sent and "<script" not in sent
    other = dict(rec, url="http://127.0.0.10/a")
    assert extract_page(other, cfg).document["extraction_method"] == "trafilatura"
    assert len(endpoint["requests"]) == 1


def test_llm_failure_keeps_trafilatura_output_and_records_why(endpoint):
    endpoint["script"] = [400]
    llm = LLMExtractor(TeacherClient(endpoint["base_url"], "tiny", timeout=5), ["127.0.0.9"])
    rec = {
        "url": "http://127.0.0.9/a",
        "status": 200,
        "body": article().encode(),
        "training_allowed": True,
    }
    doc = extract_page(rec, ExtractConfig(llm=llm)).document
    assert doc["extraction_method"] == "trafilatura" and "HTTP 400" in doc["llm_error"]
    assert "semi-aquatic" in doc["text"]


def _otter_record() -> dict:
    return {
        "url": "http://127.0.0.9/a",
        "status": 200,
        "body": article().encode(),
        "training_allowed": True,
    }


class _Client:
    """A `.chat` client answering one fixed string, as any client may (a lone surrogate is what
    JSON's "\\ud800" decodes to)."""

    def __init__(self, answer: str):
        self.answer = answer

    def chat(self, messages, items=None, temperature=None) -> str:
        return self.answer


def test_a_teacher_answer_with_a_lone_surrogate_keeps_trafilatura_output():
    llm = LLMExtractor(_Client("# Otters\n\nOtters \ud800 are mammals."), ["127.0.0.9"])
    doc = extract_page(_otter_record(), ExtractConfig(llm=llm)).document
    assert doc["extraction_method"] == "trafilatura"
    assert "not valid Unicode" in doc["llm_error"] and "semi-aquatic" in doc["text"]
    pq.write_table(pa.Table.from_pylist([doc], schema=OUTPUTS["documents"]), io.BytesIO())


def test_control_characters_in_a_teacher_answer_become_spaces(endpoint):
    endpoint["answer"] = "# Otters\n\nOtters \x00are\x01 \x1bmammals\uffff."
    llm = LLMExtractor(TeacherClient(endpoint["base_url"], "tiny", timeout=5), ["127.0.0.9"])
    doc = extract_page(_otter_record(), ExtractConfig(llm=llm)).document
    assert doc["extraction_method"] == "llm"
    assert doc["markdown"] == "# Otters\n\nOtters  are   mammals ."
    assert "Otters  are   mammals ." in doc["text"]


class _BrokenTeacher:
    """An LLM path that hands back a string no Parquet file can hold (a lone surrogate)."""

    def applies_to(self, url: str) -> bool:
        return True

    def item(self, record, doc_id=None):
        return {"id": doc_id, "url": record["url"], "training_allowed": True}

    def extract(self, html: str, url: str, item=None) -> str:
        return "Otters \ud800 swim."

    def plain_text(self, markdown: str) -> str:
        return markdown


def test_a_result_utf8_cannot_encode_is_an_extract_error_not_a_crash():
    res = extract_page(_otter_record(), ExtractConfig(llm=_BrokenTeacher()))
    assert res.document is None and res.reject["reason"] == "extract_error"
    assert "its document row" in res.reject["detail"] and "surrogate" in res.reject["detail"]
    pq.write_table(pa.Table.from_pylist([res.reject], schema=OUTPUTS["rejects"]), io.BytesIO())
