"""End to end on the sample web: serve it, crawl, extract, fetch every image ref; each ref's drop
reason is the one the sample web's ground truth (`images[].expect_drop`) says, and nothing that
opted out is stored."""

from __future__ import annotations

import hashlib
import urllib.request
from collections import Counter

import pyarrow.parquet as pq
import pytest

from crawlers.images import fetch_images, load_refs

# Every image ref of the whole sample web fetched end to end: over 20 s on a quiet 2-core machine.
pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

OPT_OUT = ("robots_denied", "training_opt_out", "noai")
EXPECTED_REASONS = {
    "robots_denied",
    "training_opt_out",
    "noai",
    "decompression_bomb",
    "undecodable",
    "too_small",
    "bad_aspect",
}


@pytest.fixture(scope="module")
def run(tmp_path_factory, sample_lake):
    """The session's sample web crawled and extracted (tests/samplelake.py), and every image
    ref it found fetched from the still-served web."""
    root = tmp_path_factory.mktemp("sampleweb-images")
    web, sw = sample_lake.web, sample_lake.served
    fast = {"delay": 0.0, "allow_private_networks": True}
    refs = load_refs(sample_lake.extract.dir)
    summary = fetch_images(refs, root / "images", {**fast, "max_retries": 0, "robots_retries": 0})
    labels = sample_lake.labels()
    bases = {s.name: sw.base_url(s.name) for s in web.sites}
    with urllib.request.urlopen(sw.url("gallery-en", "/img/logo.png")) as resp:
        logo_xrt = resp.headers.get("X-Robots-Tag")
    noimageai_xrt = {}
    for (site, path), page in web.pages.items():
        if page.headers.get("X-Robots-Tag") and page.content_type.startswith("image/"):
            req = urllib.request.Request(sw.url(site, path), method="HEAD")
            with urllib.request.urlopen(req) as resp:
                noimageai_xrt[path] = resp.headers.get("X-Robots-Tag")
    # Ground truth per ref: (page url, absolute image url) -> image label (with expect_drop).
    truth = {}
    for lab in labels:
        if lab["is_content"]:
            for img in lab["images"]:
                truth[(lab["url"], bases[lab["site"]] + img["src"])] = img
    rows = pq.read_table(root / "images" / "fetched.parquet").to_pylist()
    return {
        "root": root,
        "lake": sample_lake.root,
        "web": web,
        "refs": refs,
        "rows": rows,
        "summary": summary,
        "truth": truth,
        "labels": {lab["url"]: lab for lab in labels},
        "logo_xrt": logo_xrt,
        "image_xrt": noimageai_xrt,
    }


def _joined(run) -> list[tuple[dict, dict, dict]]:
    """(ref, fetched row, ground-truth image label) for every ref."""
    out = []
    for ref, row in zip(run["refs"], run["rows"], strict=True):
        assert ref["id"] == row["id"]
        key = (ref["url"], ref["src"])
        assert key in run["truth"], f"image ref {key} has no ground-truth label"
        out.append((ref, row, run["truth"][key]))
    return out


def test_the_sample_web_has_a_few_hundred_image_refs(run):
    assert 250 <= len(run["refs"]) <= 600
    kinds = Counter(img["kind"] for _, _, img in _joined(run))
    assert kinds["scene"] >= 200 and kinds["logo"] >= 40
    assert kinds["reencoded"] >= 3 and kinds["resized"] >= 3
    assert {"bomb", "truncated", "spacer", "banner"} <= set(kinds)


def test_every_drop_reason_is_the_expected_one(run):
    joined = _joined(run)
    wrong = [
        (ref["url"], ref["src"], row["drop_reason"], img["expect_drop"], row["error"])
        for ref, row, img in joined
        if row["drop_reason"] != img["expect_drop"]
    ]
    assert not wrong, wrong[:10]
    assert EXPECTED_REASONS <= {row["drop_reason"] for _, row, _ in joined}
    assert sum(row["drop_reason"] is None for _, row, _ in joined) >= 200


def test_opted_out_images_are_not_stored(run):
    joined = _joined(run)
    stored = {p.name.split(".")[0] for p in (run["root"] / "images" / "images").rglob("*.*")}
    allowed_srcs = {ref["src"] for ref, row, _ in joined if row["drop_reason"] is None}
    opted_out_only = {ref["src"] for ref, row, _ in joined if row["drop_reason"] in OPT_OUT}
    opted_out_only -= allowed_srcs  # the logo is on opted-out and on open pages
    assert len(opted_out_only) >= 20
    for _, row, _ in joined:
        if row["drop_reason"] in OPT_OUT:
            assert row["image_path"] is None and not row["training_allowed"], row
        if row["drop_reason"] is None:
            assert row["image_path"] and row["training_allowed"], row
            assert (run["root"] / "images" / row["image_path"]).exists()
    labels, web = run["labels"], run["web"]
    body = {u: web.pages[(labels[u]["site"], labels[u]["path"])].body for u in opted_out_only}
    leaked = [u for u in opted_out_only if hashlib.sha256(body[u]).hexdigest() in stored]
    assert not leaked
    assert stored == {row["image_sha256"] for _, row, _ in joined if row["image_path"]}


def test_x_robots_tag_opt_out_is_read_from_the_headers_without_the_body(run):
    assert run["logo_xrt"] is None
    assert Counter(run["image_xrt"].values()) == {
        "noimageai": 3,
        "RefineryBot-Extended: noai": 1,
        "OtherBot: noimageai": 1,
    }
    header_opt_outs = [
        row
        for ref, row, img in _joined(run)
        if img["expect_drop"] == "noai" and row["error"] and "X-Robots-Tag" in row["error"]
    ]
    assert len(header_opt_outs) == 4
    assert all(not row["bytes"] and row["image_sha256"] is None for row in header_opt_outs)


def test_page_noimageai_reaches_documents_and_drops_only_the_images(run):
    lake = run["lake"]
    docs = {d["url"]: d for d in pq.read_table(lake / "extract" / "documents.parquet").to_pylist()}
    pages = {p["url"]: p for p in pq.read_table(lake / "crawl" / "pages.parquet").to_pylist()}
    marked = [u for u, lab in run["labels"].items() if lab["noimageai"] and not lab["noai"]]
    assert marked
    for url in marked:
        assert pages[url]["noimageai"] and not pages[url]["noai"]
        assert docs[url]["noimageai"] and not docs[url]["noai"]
        assert docs[url]["training_allowed"]  # the text stays usable
        rows = [row for ref, row, _ in _joined(run) if ref["url"] == url]
        assert rows and all(row["drop_reason"] == "noai" for row in rows)
        assert all("noimageai" in row["error"] for row in rows)
    others = [u for u, d in docs.items() if d["noimageai"]]
    labelled = {u for u, lab in run["labels"].items() if lab["noimageai"]}
    assert set(others) == labelled & set(docs)


def test_copies_of_gallery_scenes_are_fetched_and_kept(run):
    copies = [(row, img) for _, row, img in _joined(run) if img["copy_of"]]
    assert len(copies) >= 6
    for row, img in copies:  # one copy sits on the noimageai page
        assert row["drop_reason"] == img["expect_drop"] and img["expect_drop"] in (None, "noai")
    copies = [(row, img) for row, img in copies if img["expect_drop"] is None]
    assert len(copies) >= 6
    assert any(row["image_path"].endswith(".jpg") for row, _ in copies)
    summary = run["summary"]
    assert summary["rows"] == len(run["refs"])
    assert summary["requests"] < len(run["refs"])  # the logo is fetched once, not per page
