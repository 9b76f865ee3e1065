"""The extract stage end to end on a small crawl: render what needs it, Beam extraction, accounting."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from common import lake
from pipelines.stages.extract import run_extract

from .conftest import write_crawl
from .pages import JS_PASSAGES, article, js_page

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def extracted(tmp_path_factory, subresources):
    """One crawl of static, JS and bad pages, extracted once with --render auto."""
    base = subresources.base
    crawl = write_crawl(
        tmp_path_factory.mktemp("crawl"),
        [
            {
                "url": f"{base}/articles/otters",
                "status": 200,
                "body": article().encode(),
                "content_type": "text/html",
            },
            {
                "url": f"{base}/articles/kelp",
                "status": 200,
                "body": article("Kelp").encode(),
                "training_allowed": False,
            },
            {
                "url": f"{base}/live",
                "status": 200,
                "body": js_page(base).encode(),
                "content_type": "text/html; charset=utf-8",
            },
            {"url": f"{base}/missing", "status": 404, "body": b"<html>not found</html>"},
            {
                "url": f"{base}/private/page",
                "status": None,
                "crawl_allowed": False,
                "training_allowed": False,
            },
            {
                "url": f"{base}/logo",
                "status": 200,
                "body": b"\x89PNG\r\n\x1a\n" + bytes(200),
                "content_type": "text/html",
            },
            {"url": f"{base}/empty", "status": 200, "body": b"   "},
        ],
        crawl_config={"allow_private_networks": True},  # a crawl of a loopback site
    )
    out = tmp_path_factory.mktemp("extract")
    summary = run_extract(crawl, out, "auto", pages_in_flight=2, page_timeout_s=20)
    return base, out, summary


def test_pages_in_equal_documents_plus_rejects(extracted):
    _, out, summary = extracted
    docs = pq.read_table(out / "documents.parquet")
    rejects = pq.read_table(out / "rejects.parquet")
    assert summary.pages == 7 == docs.num_rows + rejects.num_rows
    assert summary.rejects_by_reason == {
        "binary_body": 1,
        "empty_body": 1,
        "http_status": 1,
        "robots_denied": 1,
    }
    for name in ("documents", "image_refs", "tables", "interleaved", "rejects"):
        assert (
            lake.read_manifest(out / f"{name}.parquet")["rows"]
            == pq.read_metadata(out / f"{name}.parquet").num_rows
        )


def test_only_the_script_page_is_rendered_and_its_passages_recovered(extracted):
    base, out, _ = extracted
    docs = {r["url"]: r for r in pq.read_table(out / "documents.parquet").to_pylist()}
    assert not docs[f"{base}/articles/otters"]["rendered"]
    assert docs[f"{base}/articles/otters"]["render_reason"].startswith("static")
    live = docs[f"{base}/live"]
    assert live["rendered"] and "app shell" in live["render_reason"]
    for passage in JS_PASSAGES:
        assert passage in live["text"], passage


def test_robots_disallowed_subrequest_is_blocked_and_recorded(extracted):
    base, out, _ = extracted
    rendered = {
        r["url"]: r for r in pq.read_table(out / "rendered" / "rendered.parquet").to_pylist()
    }
    blocked = rendered[f"{base}/live"]["blocked_requests"]
    assert [b["url"] for b in blocked] == [f"{base}/private/data"]
    docs = {r["url"]: r for r in pq.read_table(out / "documents.parquet").to_pylist()}
    assert "Robots-protected passage." not in docs[f"{base}/live"]["text"]


def test_tables_images_and_training_flags_reach_child_datasets(extracted):
    base, out, _ = extracted
    tables = pq.read_table(out / "tables.parquet").to_pylist()
    assert {t["url"] for t in tables} == {f"{base}/articles/otters", f"{base}/articles/kelp"}
    by_url = {t["url"]: t for t in tables}
    assert by_url[f"{base}/articles/kelp"]["training_allowed"] is False
    assert by_url[f"{base}/articles/otters"]["training_allowed"] is True
    refs = [
        r
        for r in pq.read_table(out / "image_refs.parquet").to_pylist()
        if r["url"].endswith("otters")
    ]
    assert [r["src"].rsplit("/", 1)[1] for r in refs] == ["otter.jpg", "kelp.png"]
    assert refs[0]["position"] < refs[1]["position"]


def test_cli_extract_without_rendering(extracted, tmp_path):
    from typer.testing import CliRunner

    from pipelines.cli import app

    crawl = json.loads((extracted[1] / "documents.parquet.manifest.json").read_text())["inputs"][0]
    result = CliRunner().invoke(
        app, ["extract", "--crawl", crawl, "--out", str(tmp_path), "--render", "never"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["rendered"] == 0 and summary["documents"] + summary["rejects"] == 7
    assert not (tmp_path / "rendered").exists()
