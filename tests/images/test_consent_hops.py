"""Consent on every hop of an image's fetch and after it: an X-Robots-Tag opt-out on a redirect,
the URL that served the bytes (`final_url`) asked again by the consent recheck, an unreachable
robots.txt that is no verdict, and a resume that applies a ledger appended since the kill."""

from __future__ import annotations

import asyncio

import pyarrow.parquet as pq
import pytest

from common.consent import Consent, latest_rows, ledger_files
from crawlers.consent import recheck
from crawlers.crawl.downloader import Downloader
from crawlers.images import FETCHED, fetch_images
from crawlers.images.consent import HeaderGate

from .conftest import AGENT, FAST, TRAINING_AGENT, Resource, png, ref

pytestmark = pytest.mark.timeout(60)

A, B = "127.0.0.153", "127.0.0.154"  # the page's image host, and a CDN it redirects to
ALLOW = "User-agent: *\nAllow: /\n"
DENY_TRAINING = f"User-agent: {TRAINING_AGENT}\nDisallow: /\n"
RECHECK = {"allow_private_networks": True, "delay": 0.0, "robots_retries": 0}


def _rows(out) -> dict[str, dict]:
    return {r["id"]: r for r in pq.read_table(out / FETCHED).to_pylist()}


def _noai_redirect(location: str, word: str = "noai") -> Resource:
    """A 302 that itself says X-Robots-Tag `word` (the conftest server's `location` sends no
    other header, so this is a plain response with a Location header)."""
    return Resource(
        b"", "text/plain", status=302, headers={"Location": location, "X-Robots-Tag": word}
    )


def test_x_robots_tag_noai_on_a_redirect_hop_is_the_images_opt_out(image_server, tmp_path):
    """The image URL answers 302 with X-Robots-Tag: noai to an allowed image: `noai`, nothing
    stored, training not allowed, and the target never requested. A 302 scoped to another bot
    is followed as before."""
    server = image_server(
        {"/ok.png": Resource(png(64, 48))}, robots={A: ALLOW, B: ALLOW}, ips=[A, B]
    )
    target = server.url(B, "/ok.png")
    server.routes["/xrt302"] = _noai_redirect(target)
    server.routes["/scoped302"] = _noai_redirect(target, f"{TRAINING_AGENT}: noimageai")
    server.routes["/other302"] = _noai_redirect(target, "OtherBot: noai")
    refs = [
        ref("x", server.url(A, "/xrt302")),
        ref("s", server.url(A, "/scoped302")),
        ref("o", server.url(A, "/other302")),
    ]
    fetch_images(refs, tmp_path, FAST)
    rows = _rows(tmp_path)
    for rid in ("x", "s"):
        row = rows[rid]
        assert row["drop_reason"] == "noai", row
        assert row["training_allowed"] is False and row["image_path"] is None
        assert "redirect not followed" in row["error"]
    assert rows["o"]["drop_reason"] is None and rows["o"]["training_allowed"] is True
    assert server.requests[(B, "/ok.png")] == 1  # for the other bot's 302 only


def test_the_downloader_applies_its_header_gate_to_redirect_hops_only_when_given_one(
    image_server,
):
    """The gate is the caller's: the image fetch passes one; a caller without one (the render's
    sub-requests, sitemaps) follows the redirect as before, its X-Robots-Tag on the 3xx hop in
    `hops` for it to read."""
    server = image_server({"/ok.png": Resource(png(40, 40))}, robots={A: ALLOW}, ips=[A])
    server.routes["/xrt302"] = _noai_redirect(server.url(A, "/ok.png"))
    cfg = {"allow_private_networks": True, "delay": 0.0, "max_retries": 0, "robots_retries": 0}

    async def go(gate):
        async with Downloader(cfg, header_gate=gate) as d:
            return await d.fetch(server.url(A, "/xrt302"), wanted_types=("image/*",))

    gated = asyncio.run(go(HeaderGate(AGENT, TRAINING_AGENT)))
    assert gated.error.startswith("x-robots-tag-noai") and gated.status == 302
    assert gated.final_url == server.url(A, "/xrt302")
    assert server.requests[(A, "/ok.png")] == 0
    plain = asyncio.run(go(None))
    assert plain.ok and plain.final_url == server.url(A, "/ok.png")
    assert ("X-Robots-Tag", "noai") in plain.hops[0].response_headers


def test_fetched_records_the_url_that_served_the_bytes(image_server, tmp_path):
    server = image_server(
        {"/cdn/x.png": Resource(png(64, 48))}, robots={A: ALLOW, B: ALLOW}, ips=[A, B]
    )
    server.routes["/img/x.png"] = Resource(location=server.url(B, "/cdn/x.png"))
    server.routes["/direct.png"] = Resource(png(50, 40))
    refs = [
        ref("r", server.url(A, "/img/x.png")),
        ref("d", server.url(A, "/direct.png")),
        ref("p", server.url(A, "/direct.png"), training_allowed=False),
    ]
    fetch_images(refs, tmp_path, FAST)
    rows = _rows(tmp_path)
    assert rows["r"]["final_url"] == server.url(B, "/cdn/x.png") and rows["r"]["image_path"]
    assert rows["d"]["final_url"] == server.url(A, "/direct.png")
    assert rows["p"]["final_url"] is None  # nothing requested for it


def _lake_with_redirected_image(image_server, tmp_path):
    """A lake whose one stored image was served by a CDN (B) that its src (A) redirected to."""
    server = image_server(
        {"/cdn/x.png": Resource(png(64, 48))}, robots={A: ALLOW, B: ALLOW}, ips=[A, B]
    )
    server.routes["/img/x.png"] = Resource(location=server.url(B, "/cdn/x.png"))
    lake = tmp_path / "lake"
    out = lake / "images" / "pairs"
    src = server.url(A, "/img/x.png")
    fetch_images([ref("d1-0", src, doc_id="d1")], out, FAST)
    (row,) = _rows(out).values()
    assert row["image_path"] and row["training_allowed"] is True
    return server, lake, row


def test_recheck_opts_the_image_out_when_the_cdn_that_served_it_opts_out(image_server, tmp_path):
    server, lake, row = _lake_with_redirected_image(image_server, tmp_path)
    assert recheck(lake, RECHECK).changed == 0  # both still allow
    server.robots[B] = DENY_TRAINING  # the CDN, not the src's host
    result = recheck(lake, RECHECK)
    assert (result.opted_out, result.images) == (1, 1)
    (ledger,) = latest_rows(ledger_files(lake)).values()
    assert (ledger["url"], ledger["doc_ids"], ledger["training_allowed"]) == (
        row["src"],
        ["d1-0"],
        False,
    )
    assert ledger["robots_url"] == f"http://{B}:{server.port}/robots.txt"
    assert ledger["rule"] == "Disallow: /"
    assert not Consent.load(lake).allows(row)


def test_recheck_re_allows_a_redirected_image_only_when_every_hop_allows(image_server, tmp_path):
    server, lake, row = _lake_with_redirected_image(image_server, tmp_path)
    server.robots[A] = DENY_TRAINING  # the src's host opts out
    assert recheck(lake, RECHECK).opted_out == 1
    server.robots[A] = ALLOW
    server.robots[B] = [(503, "down")]  # the CDN's robots.txt cannot be read: no evidence
    result = recheck(lake, RECHECK)
    assert result.changed == 0 and f"http://{B}:{server.port}" in result.unreachable
    assert not Consent.load(lake).allows(row)
    server.robots[B] = ALLOW
    assert recheck(lake, RECHECK).re_allowed == 1
    assert Consent.load(lake).allows(row)


def test_an_unreachable_robots_txt_is_a_fetch_error_that_resume_asks_again(image_server, tmp_path):
    server = image_server({"/x.png": Resource(png(64, 48))}, robots={A: [(503, "down")]}, ips=[A])
    refs = [ref("x", server.url(A, "/x.png"))]
    first = fetch_images(refs, tmp_path, FAST)  # robots_retries=0: unreachable for this run
    row = _rows(tmp_path)["x"]
    assert row["drop_reason"] == "fetch_error" and row["error"].startswith("robots-unreachable")
    assert row["training_allowed"] is False and row["image_path"] is None
    assert first["requests"] == 1 and server.requests[(A, "/x.png")] == 0
    server.robots[A] = ALLOW  # the host is back
    second = fetch_images(refs, tmp_path, FAST, resume=True)
    row = _rows(tmp_path)["x"]
    assert row["drop_reason"] is None and row["training_allowed"] is True, row
    assert second["requests"] == 1 and server.requests[(A, "/x.png")] == 1


def _opted_out(r: dict) -> dict:
    """The ref as load_refs gives it once the ledger opted its document out."""
    why = f"the consent ledger opted out doc_id={r['doc_id']}"
    return {**r, "training_allowed": False, "consent_reason": why}


def test_resume_applies_the_ledger_appended_since_the_killed_run(image_server, tmp_path):
    """A ledger change between the run and its resume does not refuse the resume: a ref now
    opted out becomes its training_opt_out row, its file removed unless another row keeps it;
    a ref allowed again is fetched; nothing else is fetched again."""
    routes = {f"/{n}.png": Resource(png(40 + i, 40, (i * 60, 9, 9))) for i, n in enumerate("abc")}
    server = image_server(routes, robots={A: ALLOW}, ips=[A])
    refs = [
        ref("a", server.url(A, "/a.png")),
        ref("b1", server.url(A, "/b.png")),
        ref("b2", server.url(A, "/b.png")),  # the same image for another page
        ref("c", server.url(A, "/c.png")),
    ]
    fetch_images(refs, tmp_path, FAST)
    before = _rows(tmp_path)
    assert all(r["image_path"] for r in before.values())
    now = [_opted_out(r) if r["id"] in ("a", "b1") else r for r in refs]
    summary = fetch_images(now, tmp_path, FAST, resume=True)
    rows = _rows(tmp_path)
    for rid in ("a", "b1"):
        assert rows[rid]["drop_reason"] == "training_opt_out", rows[rid]
        assert rows[rid]["training_allowed"] is False and rows[rid]["image_path"] is None
        assert "opted out doc_id" in rows[rid]["error"]
    assert not (tmp_path / before["a"]["image_path"]).exists()  # no row keeps it
    assert (tmp_path / before["b1"]["image_path"]).exists()  # b2 still does
    assert rows["b2"]["image_path"] == before["b2"]["image_path"]
    assert rows["c"] == before["c"]
    assert summary["requests"] == 0 and summary["training_allowed"] == 2
    # allowed again: the ref is fetched once more and its file is back
    summary = fetch_images(refs, tmp_path, FAST, resume=True)
    rows = _rows(tmp_path)
    assert rows["a"]["image_path"] == before["a"]["image_path"]
    assert (tmp_path / rows["a"]["image_path"]).exists()
    assert summary["requests"] == 1 and server.requests[(A, "/a.png")] == 2
    assert rows["b1"]["image_path"] == before["b1"]["image_path"]
