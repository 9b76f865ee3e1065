"""The built web: determinism, size, and labels that agree with the pages they describe."""

from __future__ import annotations

import io
import json
import re
import struct
from collections import defaultdict

import lxml.html
from gpyrobotstxt.robots_cc import RobotsMatcher
from PIL import Image

from sampleweb import build_web
from sampleweb.content import CJK, LANGS, word_count
from sampleweb.extras import iban_ok, luhn_ok
from sampleweb.robots import CRAWL_TOKEN, TRAINING_TOKEN


def test_two_builds_are_byte_identical(web):
    again = build_web(0)
    assert list(again.pages) == list(web.pages)
    for key, page in web.pages.items():
        other = again.pages[key]
        assert (other.status, other.headers, other.body, other.labels) == (
            page.status,
            page.headers,
            page.body,
            page.labels,
        ), key


def test_another_seed_changes_generated_parts(web):
    other = build_web(1)
    assert any(web.pages[k].body != p.body for k, p in other.pages.items() if k in web.pages)


def test_web_has_enough_sites_pages_and_languages(web):
    content = web.content_pages()
    assert len(web.sites) >= 12
    assert len(content) >= 300
    langs = {p.labels["lang"] for p in content}
    assert set(LANGS) <= langs
    for lang in LANGS:
        mine = [p for p in content if p.labels["lang"] == lang]
        assert sum(p.labels["is_reference"] for p in mine) >= 8, lang
        assert sum(p.labels["quality"] == "low" for p in mine) >= 8, lang
        assert sum(p.labels["quality"] == "medium" for p in mine) >= 8, lang


def test_reference_pages_have_several_long_paragraphs(web):
    for p in web.content_pages():
        if p.labels["is_reference"]:
            lang = p.labels["lang"]
            assert p.labels["main_text"].count("\n") >= 2, p.path
            assert word_count(p.labels["main_text"], lang) >= (300 if lang in CJK else 150), p.path


def _sentences(text: str) -> set[str]:
    parts = re.split(r"(?<=[.!?])\s+|(?<=[。！？])|\n", text)
    out = set()
    for s in parts:
        s = s.strip()
        long_enough = len(s) >= 12 if any(ord(c) > 0x2E80 for c in s) else len(s.split()) >= 5
        if long_enough:
            out.add(s)
    return out


def test_no_sentence_is_shared_between_pages_that_are_not_duplicates(web):
    seen: dict[str, tuple[str, str | None]] = {}
    for p in web.content_pages():
        url, cluster = f"{p.site}{p.path}", p.labels["dup_cluster"]
        for s in _sentences(p.labels["main_text"]):
            if s in seen:
                other_url, other_cluster = seen[s]
                assert cluster is not None and cluster == other_cluster, (
                    f"{url} and {other_url} share {s!r}"
                )
            else:
                seen[s] = (url, cluster)


def test_js_only_text_is_absent_from_html_but_present_in_loaded_resources(web):
    js_pages = [p for p in web.content_pages() if p.labels["page_type"] == "js"]
    assert {p.labels["js_mechanism"] for p in js_pages} >= {
        "settimeout",
        "fetch_json",
        "load_more",
        "infinite_scroll",
        "react_shell",
        "noscript",
        "tabs",
        "details",
        "shadow_root",
    }
    for p in js_pages:
        html = p.body.decode()
        loaded = "".join(web.pages[(p.site, r)].body.decode() for r in p.labels["resources"])
        for r in p.labels["resources"]:
            assert r in html or r in loaded, (
                p.path,
                r,
            )  # each resource is referenced by the page or a loaded one
        for text in p.labels["js_only_text"]:
            assert text not in html and json.dumps(text, ensure_ascii=False)[1:-1] not in html, (
                p.path
            )
            assert json.dumps(text, ensure_ascii=False)[1:-1] in loaded, p.path
            assert text in p.labels["main_text"]
        if p.labels["js_mechanism"] in ("accordion", "details"):
            assert not p.labels["js_only_text"]
        else:
            assert p.labels["js_only_text"], p.path


def test_duplicate_clusters_have_an_original_and_copies(web):
    clusters = defaultdict(list)
    for p in web.content_pages():
        if p.labels["dup_cluster"]:
            clusters[p.labels["dup_cluster"]].append(p)
    assert sum(c.startswith("near-") for c in clusters) >= 12
    assert sum(c.startswith("exact-") for c in clusters) >= 3
    for name, pages in clusters.items():
        assert len(pages) >= 2 and len({p.site for p in pages}) >= 2, name
        if name.startswith("exact-"):
            assert len({p.body for p in pages}) == 1, name
        else:
            texts = {p.labels["main_text"] for p in pages}
            assert len(texts) == len(pages), f"{name}: near-duplicates must differ a little"


def test_pii_labels_are_in_the_text_and_valid(web):
    found = defaultdict(int)
    for p in web.content_pages():
        for item in p.labels["pii"] + p.labels["pii_decoys"]:
            assert item["value"] in p.labels["main_text"], (p.path, item)
            found[item["type"]] += 1
            if item["type"] == "credit_card":
                assert luhn_ok(item["value"])
            if item["type"] == "iban":
                assert iban_ok(item["value"])
    for kind in (
        "email",
        "phone",
        "ipv4",
        "credit_card",
        "iban",
        "version",
        "date",
        "price",
        "isbn",
    ):
        assert found[kind] >= 1, kind


def test_table_labels_match_the_html(web):
    tabled = [p for p in web.content_pages() if p.labels["tables"]]
    assert len(tabled) >= 6
    assert any("rowspan" in p.body.decode() for p in tabled) and any(
        "colspan" in p.body.decode() for p in tabled
    )
    for p in tabled:
        tables = lxml.html.fromstring(p.body).xpath("//table")
        assert len(tables) == len(p.labels["tables"]), p.path
        for node, label in zip(tables, p.labels["tables"], strict=True):
            assert [th.text_content() for th in node.xpath(".//thead//th")] == label["header"]
            assert len(node.xpath(".//tbody/tr")) == label["rows"]
            assert label["cols"] == len(label["header"])


def test_images_are_of_the_labelled_format_and_size_with_the_labelled_alt(web):
    labelled = [(p, img) for p in web.content_pages() for img in p.labels["images"]]
    assert len(labelled) >= 30
    assert any(not img["alt_matches"] for _, img in labelled) and any(
        img["alt_matches"] for _, img in labelled
    )
    assert {img["domain"] for _, img in labelled} >= {"science", "medical", "food"}
    for page, img in labelled:
        res = web.pages[(page.site, img["src"])]
        fmt = {"image/png": "PNG", "image/jpeg": "JPEG"}[res.content_type]
        if img["kind"] == "bomb":  # opening it is what a safe decoder must refuse: read IHDR
            assert res.body[12:16] == b"IHDR" and len(res.body) < 100_000
            assert struct.unpack(">II", res.body[16:24]) == (img["width"], img["height"])
        else:
            with Image.open(io.BytesIO(res.body)) as im:
                assert im.format == fmt and im.size == (img["width"], img["height"])
        alts = lxml.html.fromstring(page.body).xpath(f'//img[@src="{img["src"]}"]/@alt')
        assert alts == [img["alt"]]


def test_robots_expectations_agree_with_googles_parser(web):
    robots = {site: p for (site, path), p in web.pages.items() if path == "/robots.txt"}
    assert robots["portal-multi"].status == 503 and robots["mirror-multi"].status == 404
    checked = defaultdict(int)
    for (site, path), p in web.pages.items():
        if path == "/robots.txt":
            continue  # RFC 9309 2.2.2: implicitly allowed; Google's matcher does not special-case it
        r = robots[site]
        url = f"http://{site}.test{path}"
        if r.status == 200:
            crawl = RobotsMatcher().allowed_by_robots(r.body, [CRAWL_TOKEN], url)
            train = RobotsMatcher().allowed_by_robots(r.body, [TRAINING_TOKEN], url)
        else:
            crawl = train = r.status < 500
        assert p.labels["expect_crawl_allowed"] == crawl, url
        assert p.labels["expect_training_allowed"] == (crawl and train and not p.labels["noai"]), (
            url
        )
        checked[(crawl, train)] += 1
    assert checked[(True, True)] and checked[(True, False)] and checked[(False, False)]


def test_robots_signals_are_labelled(web):
    content = web.content_pages()
    for flag in ("noindex", "nofollow", "noai"):
        assert sum(p.labels[flag] for p in content) >= 2, flag
    assert any(p.headers.get("X-Robots-Tag") == "noai" for p in content)
    assert sum(not p.labels["expect_crawl_allowed"] for p in content) >= 10
    assert (
        sum(
            p.labels["expect_crawl_allowed"] and not p.labels["expect_training_allowed"]
            for p in content
        )
        >= 10
    )
