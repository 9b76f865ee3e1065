"""The URL filter (filters.urls over common.urlblock): UT1 lists by host, domain, sub-domain and
URL, FineWeb's banned words, reloading, errors, the default list, and the crawler's frontier."""

from __future__ import annotations

import asyncio
import os
import time

import pyarrow.parquet as pq
import pytest
from aiohttp import web

from common.urlblock import (
    BannedWords,
    Blocklist,
    BlocklistError,
    default_entries,
    load_blocklist,
    write_lists,
)
from filters.config import FilterConfig, UrlFilterConfig
from filters.urls import UrlFilter
from tests.crawl.loopback import LoopbackServer


def _lists(**cats):
    return Blocklist.from_entries({c: {"domains": d} for c, d in cats.items()})


def test_a_listed_domain_blocks_its_subdomains_but_not_lookalike_hosts():
    bl = _lists(adult=["example.com"], phishing=["login.bank.test"])
    assert bl.match("http://example.com/") == ("adult", "host example.com")
    assert bl.match("https://www.example.com/a") == ("adult", "domain example.com")
    assert bl.match("https://a.b.example.com/a") == ("adult", "domain example.com")
    for url in (
        "http://evil-example.com/",
        "http://notexample.com/",
        "http://example.com.evil.net/",
        "http://example.co/",
        "http://evil.net/?next=example.com",
        "http://evil.net/example.com/",
    ):
        assert bl.match(url) is None, url
    # a listed sub-domain blocks itself and below, never its parent or siblings
    assert bl.match("http://x.login.bank.test/")[0] == "phishing"
    assert bl.match("http://bank.test/") is None
    assert bl.match("http://www.bank.test/") is None


def test_idn_case_and_trailing_dot_spellings_meet():
    bl = _lists(adult=["Bücher.DE.", "xn--mnchen-3ya.de", "EXAMPLE.org"])
    for url in (
        "http://xn--bcher-kva.de/",
        "http://BÜCHER.de./x",
        "http://shop.bücher.de/",
        "http://münchen.de/",
        "http://MÜNCHEN.DE/",
        "http://Example.ORG./",
        "http://WWW.example.org:443/",
    ):
        assert bl.match(url) is not None, url
    assert bl.match("http://buecher.de/") is None


def test_userinfo_and_port_do_not_hide_the_host():
    bl = _lists(malware=["example.com", "10.1.2.3"])
    assert bl.match("http://user:pw@example.com:8443/p")[0] == "malware"
    assert bl.match("https://example.com:443/")[0] == "malware"
    assert bl.match("http://10.1.2.3:8080/")[0] == "malware"
    # the userinfo trick: the host is evil.net, not example.com
    assert bl.match("http://example.com@evil.net/") is None
    assert bl.match("http://example.com:pw@evil.net/") is None
    assert bl.match("not a url") is None and bl.match("http://[::1/") is None


def test_a_listed_url_blocks_itself_and_below_at_a_slash_boundary():
    bl = Blocklist.from_entries(
        {"adult": {"urls": ["http://www.site.org/bad/path/", "site.org/page?id=7"]}}
    )
    assert bl.match("https://site.org/bad/path")[0] == "adult"
    assert bl.match("https://www3.site.org/BAD/path/deeper/x.html")[0] == "adult"
    assert bl.match("https://u@site.org:8080/bad/path?x=1")[0] == "adult"
    assert bl.match("https://site.org/page?id=7")[0] == "adult"
    assert bl.match("https://site.org/bad/pathology") is None
    assert bl.match("https://site.org/bad") is None
    assert bl.match("https://site.org/page?id=8") is None
    assert bl.match("https://other.site.org/bad/path") is None


def test_banned_words_hard_soft_and_subwords():
    w = BannedWords.default()
    assert w.match("http://a.test/porn/clip") == ("banned_word", "porn")
    assert w.match("http://a.test/videos/XXX-1") == ("banned_word", "xxx")
    assert w.match("http://a.test/sex-nude-gallery") == ("soft_banned_words", "nude,sex")
    assert w.match("http://freeporntube.test/") == ("banned_subword", "porn")
    # one soft word alone, and words that only contain one, are not banned
    for url in (
        "http://a.test/sex-education-in-schools",
        "http://a.test/adult-learning",
        "http://sussex.ac.test/essex",
        "http://a.test/strip-mining",
    ):
        assert w.match(url) is None, url
    strict = BannedWords.from_lists({"soft": ["sex", "cam"]}, soft_threshold=1)
    assert strict.match("http://a.test/live-cam")[0] == "soft_banned_words"


def test_word_lists_from_a_directory(tmp_path):
    (tmp_path / "hard.txt").write_text("# ours\nCasino\n")
    (tmp_path / "subword.txt").write_text("jackpot\n")
    f = UrlFilter(UrlFilterConfig(words_dir=str(tmp_path), default_lists=False))
    assert f.check("http://a.test/Casino/") == ("url_blocked:banned_word", "banned_word casino")
    assert f.check("http://bigjackpotwins.test/")[0] == "url_blocked:banned_subword"
    assert f.check("http://a.test/porn/") is None  # the default words are replaced


def test_a_hundred_thousand_domains_load_fast_and_match(tmp_path):
    domains = [f"host{i}.spam{i % 997}.test" for i in range(100_000)]
    write_lists(tmp_path, {"spam": {"domains": domains}, "adult": {"domains": ["a.test"]}})
    t0 = time.perf_counter()
    bl = load_blocklist(tmp_path)
    took = time.perf_counter() - t0
    assert bl.counts["spam"]["domains"] == 100_000
    assert bl.match("http://www.host99999.spam299.test/")[0] == "spam"
    assert bl.match("http://host100000.spam289.test/") is None
    assert bl.domain_hashes.nbytes <= 8 * 100_001  # hashes, not a set of strings
    # (about 0.6 s on an idle core; the shared test machine is often 10x slower)
    assert took < 15, f"loading 100,000 domains took {took:.1f} s"
    t0 = time.perf_counter()
    for i in range(10_000):
        bl.match(f"http://www.page{i}.example.test/a/b")
    assert time.perf_counter() - t0 < 15


def test_lists_are_reread_when_a_file_changes(tmp_path):
    write_lists(tmp_path, {"adult": {"domains": ["a.test"]}})
    assert load_blocklist(tmp_path).match("http://b.test/") is None
    assert load_blocklist(tmp_path) is load_blocklist(tmp_path)  # cached while unchanged
    path = tmp_path / "adult" / "domains"
    path.write_text("a.test\nb.test\n")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert load_blocklist(tmp_path).match("http://b.test/")[0] == "adult"


def test_an_unreadable_list_file_is_one_line_naming_it(tmp_path):
    write_lists(tmp_path, {"adult": {"domains": ["a.test"]}})
    (tmp_path / "phishing").mkdir()
    (tmp_path / "phishing" / "domains").mkdir()  # unreadable as a file, even for root
    with pytest.raises(BlocklistError) as err:
        load_blocklist(tmp_path)
    msg = str(err.value)
    assert "\n" not in msg and str(tmp_path / "phishing" / "domains") in msg
    with pytest.raises(BlocklistError, match="blocklist directory not found"):
        load_blocklist(tmp_path / "missing")
    with pytest.raises(BlocklistError, match="urls.categories"):
        load_blocklist(tmp_path, ["adult", "gambling"])


def test_bad_lines_are_counted_not_fatal(tmp_path):
    write_lists(tmp_path, {"adult": {"domains": ["a.test", "not a host", "x/y", "b.test"]}})
    bl = load_blocklist(tmp_path)
    assert bl.counts["adult"]["domains"] == 2 and bl.bad_lines == {"adult/domains": 2}


def test_the_generated_default_blocks_its_own_entries_and_no_sample_web_page(labelled_docs):
    f = UrlFilter(FilterConfig().urls)
    entries = default_entries()
    for cat, files in entries.items():
        assert f.check(f"https://www.{files['domains'][3]}/x") == (
            f"url_blocked:{cat}",
            f"domain {files['domains'][3]}",
        )
        assert f.check(f"http://{files['urls'][0]}/page")[0] == f"url_blocked:{cat}"
    assert all(host.endswith(".invalid") for fs in entries.values() for host in fs["domains"])
    blocked = [d["url"] for d in labelled_docs if f.check(d["url"])]
    assert blocked == []


def test_annotation_drops_a_blocked_page_with_the_category_after_consent(tmp_path):
    from filters.annotate import DocumentAnnotator

    write_lists(tmp_path, {"adult": {"domains": ["example.com"]}})
    cfg = FilterConfig(urls={"blocklist_dir": str(tmp_path)})
    cfg.quality.use_default_models = False
    ann = DocumentAnnotator(cfg)
    text = "A plain page about gardens and the weather in spring. " * 20
    row = {"id": "1", "url": "http://www.example.com/a", "text": text, "training_allowed": True}
    out = ann.annotate(row)
    assert out["drop_reason"] == "url_blocked:adult"
    assert out["url_block"] == "domain example.com"
    assert ann.annotate({**row, "training_allowed": "true"})["drop_reason"] == (
        "training_not_allowed"
    )
    ok = ann.annotate({**row, "url": "http://evil-example.com/a"})
    assert ok["url_block"] is None and ok["drop_reason"] is None
    off = DocumentAnnotator(cfg.model_copy(update={"urls": UrlFilterConfig(enabled=False)}))
    assert off.annotate(row)["drop_reason"] is None


class _Site(LoopbackServer):
    """Two hosts: the first links to a listed host, a listed path and a clean page."""

    label = "blocklist site"

    def __init__(self):
        super().__init__(["127.0.0.81", "127.0.0.82"])
        self.hits: list[str] = []

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.hits.append(f"{request.host.split(':')[0]}{request.path}")
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        links = (
            f'<a href="http://127.0.0.82:{self.port}/x">x</a>'
            f'<a href="/private/area/page">p</a><a href="/fine">f</a>'
        )
        return web.Response(
            text=f"<html><body><p>hello</p>{links}</body></html>", content_type="text/html"
        )


def test_the_crawler_never_fetches_a_blocked_url(tmp_path):
    from crawlers.crawl import crawl

    lists = write_lists(
        tmp_path / "lists",
        {"malware": {"domains": ["127.0.0.82"]}, "adult": {"urls": ["127.0.0.81/private"]}},
    )
    with _Site() as site:
        config = dict(
            delay=0,
            allow_private_networks=True,
            use_sitemaps=False,
            robots_retries=0,
            blocklist=str(lists),
        )
        out = tmp_path / "crawl"
        summary = asyncio.run(crawl([f"http://127.0.0.81:{site.port}/"], out, config))
        hits = list(site.hits)
    assert not [h for h in hits if h.startswith("127.0.0.82") or "/private" in h], hits
    assert "127.0.0.81/fine" in hits
    skipped = {
        r["url"]: r["skip_reason"] for r in pq.read_table(out / "skipped.parquet").to_pylist()
    }
    assert skipped[f"http://127.0.0.82:{site.port}/x"] == "blocklist: malware (host 127.0.0.82)"
    assert skipped[f"http://127.0.0.81:{site.port}/private/area/page"] == (
        "blocklist: adult (url 127.0.0.81/private)"
    )
    assert summary["skipped"] >= 2


def test_a_resumed_crawl_skips_queued_urls_listed_since(tmp_path):
    from crawlers.crawl import crawl

    config = dict(delay=0, allow_private_networks=True, use_sitemaps=False, robots_retries=0)
    out = tmp_path / "crawl"
    with _Site() as site:
        seed = f"http://127.0.0.81:{site.port}/"
        asyncio.run(crawl([seed], out, {**config, "max_pages": 1}))  # the seed only: links queued
        lists = write_lists(tmp_path / "lists", {"malware": {"domains": ["127.0.0.82"]}})
        site.hits.clear()
        asyncio.run(crawl([seed], out, {**config, "blocklist": str(lists)}, resume=True))
        hits = list(site.hits)
    assert "127.0.0.81/fine" in hits and not [h for h in hits if h.startswith("127.0.0.82")]
    skipped = {
        r["url"]: r["skip_reason"] for r in pq.read_table(out / "skipped.parquet").to_pylist()
    }
    assert skipped[f"http://127.0.0.82:{site.port}/x"] == "blocklist: malware (host 127.0.0.82)"


def test_the_crawl_cli_refuses_an_unreadable_blocklist_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from pipelines.cli import app

    (tmp_path / "lists" / "adult" / "domains").mkdir(parents=True)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://127.0.0.81:9/\n")
    res = CliRunner().invoke(
        app,
        [
            "crawl",
            "--seeds",
            str(seeds),
            "--out",
            str(tmp_path / "o"),
            "--blocklist",
            str(tmp_path / "lists"),
        ],
    )
    assert res.exit_code == 2, res.output
    assert "adult/domains" in res.output and "cannot read the blocklist file" in res.output
    assert not (tmp_path / "o" / "frontier.sqlite").exists()


def test_adversarial_list_entries_block_no_more_than_they_name(tmp_path):
    write_lists(
        tmp_path,
        {
            "spam": {
                "domains": ["com", "co.uk.", "*.wild.test", ".squid.test", "  Spaced.TEST  "],
                "urls": ["/", "http://", "x.test/../../"],
            }
        },
    )
    bl = load_blocklist(tmp_path)
    # a bare top-level domain or public suffix listed blocks nothing under it by domain
    assert bl.match("http://example.com/") is None
    assert bl.match("http://a.com/") is None
    assert bl.match("http://shop.co.uk/")[1] == "domain co.uk"  # two labels: taken as listed
    assert bl.match("http://a.wild.test/")[1] == "domain wild.test"
    assert bl.match("http://squid.test/")[1] == "host squid.test"
    assert bl.match("http://spaced.test/")[0] == "spam"
    assert bl.bad_lines == {"spam/urls": 2}


def test_the_filter_refuses_an_unreadable_list_before_any_work(tmp_path, docs_dir):
    from filters.run import InProcess, run_filter

    (tmp_path / "lists" / "adult" / "urls").mkdir(parents=True)
    cfg = {"urls": {"blocklist_dir": str(tmp_path / "lists")}}
    with pytest.raises(BlocklistError, match="adult/urls: cannot read the blocklist file"):
        run_filter(docs_dir, tmp_path / "out", config=cfg, executor=InProcess())
    assert not (tmp_path / "out").exists()


def test_the_filter_cli_reads_blocklist_in_place_of_the_configs_lists(tmp_path, docs_dir):
    """`refinery filter --blocklist DIR` drops what DIR lists, with its category, even where the
    config names other lists; an unreadable DIR is one line and exit 2."""
    import json

    from typer.testing import CliRunner

    from pipelines.cli import app

    urls = sorted(r["url"] for r in pq.read_table(docs_dir / "documents.parquet").to_pylist())
    host, path = urls[0].split("://", 1)[1].split("/", 1)
    write_lists(tmp_path / "mine", {"spam": {"urls": [f"{host.split(':')[0]}/{path}"]}})
    write_lists(tmp_path / "theirs", {"adult": {"urls": [urls[1].split("://", 1)[1]]}})
    cfg = tmp_path / "filter.yaml"
    cfg.write_text(
        json.dumps(
            {
                "urls": {"blocklist_dir": str(tmp_path / "theirs")},
                "quality": {"use_default_models": False},
            }
        )
    )
    base = ["filter", "--docs", str(docs_dir), "--config", str(cfg), "--runner", "InProcess"]
    ok = CliRunner().invoke(
        app, [*base, "--out", str(tmp_path / "o"), "--blocklist", str(tmp_path / "mine")]
    )
    assert ok.exit_code == 0, ok.output
    ann = pq.read_table(tmp_path / "o" / "annotated.parquet").to_pylist()
    blocked = {
        r["url"]: r["drop_reason"] for r in ann if (r["drop_reason"] or "").startswith("url_")
    }
    assert blocked == {urls[0]: "url_blocked:spam"}
    bad = CliRunner().invoke(
        app, [*base, "--out", str(tmp_path / "p"), "--blocklist", str(tmp_path / "none")]
    )
    assert bad.exit_code == 2, bad.output
    assert "none: blocklist directory not found" in bad.output
    assert not (tmp_path / "p" / "annotated.parquet").exists()


def test_the_sample_webs_list_names_its_spam_pages_on_the_served_hosts(tmp_path):
    """The demo's list (sampleweb.blocklist) blocks half the spam pages of each language wherever
    the web is served, whatever the port, as url_blocked:spam, and no other page."""
    from filters.config import FilterConfig
    from filters.urls import with_blocklist
    from sampleweb import build_web
    from sampleweb.blocklist import blocked_urls, blocklist_entries

    web = build_web(0)

    def base(site):
        return f"http://127.0.0.{10 + web.site(site).index}:41234"

    lists = write_lists(tmp_path / "lists", blocklist_entries(web, base))
    f = UrlFilter(with_blocklist(FilterConfig(), lists).urls)
    truth = blocked_urls(web, base)
    pages = web.content_pages()
    langs = {p.labels["lang"] for p in pages if p.labels["lang"]}
    assert len(truth) == 2 * len(langs) and all("/misc/spam-" in u for u in truth)
    for url in truth:
        assert f.check(url.replace(":41234", ":80"))[0] == "url_blocked:spam"
    served = [base(p.site) + p.path for p in pages]
    assert sorted(u for u in served if f.check(u)) == truth
