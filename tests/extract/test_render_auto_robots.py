"""`--render auto` end to end: robots directives that scripts write reach the documents.

A crawl of two loopback hosts: on one, a template of four pages runs an external head script
that appends a robots meta (noai, noimageai) and a page's inline script adds a
`<meta name="RefineryBot-Extended" content="noai">` after a timer; the other host's scripts
write nothing. Before, every page was static under `--render auto` ("static: N chars of text,
no evidence of script-made content") and extracted training_allowed=True, noai=False; only
`--render always` honoured the directives. Needs the render stage to give probes the pages
that run scripts (`crawlers.render.crawl._plan` calling `crawlers.render.probe.settle_pages`).
"""

from __future__ import annotations

import pytest

from crawlers.extract.page import extract_page
from crawlers.render import RenderConfig
from crawlers.render.crawl import render_crawl

from .conftest import write_crawl
from .test_render_policies import FAST, Site, page_record
from .test_render_robots_probe import A_PAGES, A_ROUTES, B_PAGES, B_ROUTES, INLINE_NOAI, page

pytestmark = pytest.mark.timeout(240)


def test_auto_renders_pages_whose_scripts_write_noai_and_extraction_honours_it(
    tmp_path, no_browser_leak
):
    a_pages = {
        **{p: h for p, h in A_PAGES.items() if p.startswith("/members/")},
        "/digest": page("Members digest", "", INLINE_NOAI),
    }
    with Site("127.0.0.177", A_ROUTES) as a, Site("127.0.0.178", B_ROUTES) as b:
        records = [page_record(a.base + p, h) for p, h in a_pages.items()]
        records += [page_record(b.base + p, h) for p, h in B_PAGES.items()]
        crawl = write_crawl(tmp_path / "crawl", records)
        config = RenderConfig(pages_in_flight=2, allow_private_networks=True, **FAST)
        rows = render_crawl(crawl, "auto", config)
    by_url = {r["url"]: r for r in rows}
    docs = {}
    for rec in records:
        row = by_url[rec["url"]]
        record = {
            **rec,
            "rendered": row["rendered"],
            "render_reason": row["render_reason"],
            "rendered_html": row["html"],
        }
        docs[rec["url"].split("/", 3)[3]] = extract_page(record).document
    opted_out = [f"members/{i}" for i in range(4)] + ["digest"]
    for path in opted_out:
        doc = docs[path]
        assert doc["render_reason"].startswith("consent:"), (path, doc["render_reason"])
        assert doc["noai"] and not doc["training_allowed"], (path, doc["render_reason"])
    assert docs["members/1"]["noimageai"]
    # the control host's scripts write nothing: its pages stay static and consented
    for path in [p.lstrip("/") for p in B_PAGES]:
        doc = docs[path]
        assert not doc["rendered"] and doc["render_reason"].startswith("static:"), path
        assert doc["training_allowed"] and not doc["noai"], path
