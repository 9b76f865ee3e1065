"""The service operations from the CLI: `refinery recrawl` over a lake's crawl shard and
`refinery consent recheck` over its documents, against a real loopback sample web."""

from __future__ import annotations

import asyncio
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from pipelines.cli import app

pytestmark = pytest.mark.timeout(180)
LOOPBACK = {"allow_private_networks": True, "delay": 0.0, "robots_retries": 0}


def test_recrawl_and_consent_recheck_from_the_cli(tmp_path, monkeypatch):
    from crawlers.crawl import crawl
    from sampleweb import build_web, serve

    lake = tmp_path / "lake"
    monkeypatch.setenv("REFINERY_HOME", str(lake))
    out = lake / "crawl" / "shard=0"
    runner = CliRunner()
    # Its own web, not the shared sample lake: the CLI recrawls it and its robots.txt changes.
    with serve(build_web(0), first_octet=201) as web:
        root = web.base_url("wiki-en") + "/"
        asyncio.run(crawl([root], out, {**LOOPBACK, "max_pages": 6}))
        pages = pq.read_table(out / "pages.parquet").to_pylist()
        fetched = [p for p in pages if p["status"] == 200 and p["warc_file"]]
        res = runner.invoke(app, ["recrawl", "--all", "--allow-private-networks", "--delay", "0"])
        assert res.exit_code == 0, res.output
        revisits = pq.read_table(out / "recrawl.parquet").to_pylist()
        assert len(revisits) >= len(fetched) > 0
        assert {r["outcome"] for r in revisits} == {"unchanged"}, revisits

        # Documents of that host in the lake; its robots.txt now opts out of training.
        docs = [
            {"id": f"d{i}", "url": p["url"], "training_allowed": True}
            for i, p in enumerate(fetched)
        ]
        (lake / "filter").mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(docs), lake / "filter" / "documents.parquet")
        web.set_response(
            "wiki-en",
            "/robots.txt",
            b"User-agent: *\nAllow: /\n\nUser-agent: RefineryBot-Extended\nDisallow: /\n",
            content_type="text/plain",
        )
        res = runner.invoke(app, ["consent", "recheck", "--allow-private-networks", "--delay", "0"])
        assert res.exit_code == 0, res.output
    ledger = sorted((lake / "consent" / "ledger").glob("*.parquet"))
    assert len(ledger) == 1
    rows = pq.read_table(ledger[0]).to_pylist()
    assert {r["url"] for r in rows} == {d["url"] for d in docs}
    assert not any(r["training_allowed"] for r in rows)
    assert "opted_out" in res.output and json.dumps(len(docs)) in res.output
