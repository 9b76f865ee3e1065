"""A render killed part way resumes: the pages it finished are journaled as they finish and a
later run of the same render reuses them (not fetched again) and renders only the rest, writing
the rows one uninterrupted run writes; a journal of other settings or another crawl is
discarded, never mixed.

The kill is simulated by raising from the journal's commit after N pages (the page being
committed then has its WARC batch written but no journal entry, like a page killed mid-way),
and a torn record is appended to the WARC as a kill mid-write leaves one.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crawlers.render.archive import ArchiveLocation, read_page
from crawlers.render.crawl import JOURNAL_FILE, RenderJournal, _decode_outcome
from crawlers.render.run import run_render
from crawlers.render.session import RenderOutcome

from .conftest import write_crawl
from .test_render_policies import Site, jsn, text_of

pytestmark = pytest.mark.timeout(180)

JS_PAGES = [f"p{i}" for i in range(5)]
STATIC = (
    "<html><body><article>"
    + "<p>A static page about otters and kelp forests in the bay, long enough to stand. </p>" * 8
    + "</article></body></html>"
)
KW = {"delay": 0.0, "page_timeout_s": 20}


def _shell(name: str) -> str:
    return (
        f"<html><head><title>{name}</title></head><body><div id=root></div><script>"
        f"fetch('/api/{name}').then(r => r.json()).then(d => {{ const p = "
        "document.createElement('p'); p.textContent = d.text; root.appendChild(p); });"
        "</script></body></html>"
    )


@pytest.fixture(scope="module")
def site():
    routes = {f"/api/{n}": jsn({"text": f"Fetched passage of page {n}."}) for n in JS_PAGES}
    with Site("127.0.0.211", routes) as s:
        yield s


@pytest.fixture(scope="module")
def crawl(site, tmp_path_factory):
    """Static pages between the JS ones, so the rows' order mixes both kinds of decision."""
    pages = [("s0", STATIC)] + [(n, _shell(n)) for n in JS_PAGES[:3]] + [("s1", STATIC)]
    pages += [(n, _shell(n)) for n in JS_PAGES[3:]]
    rows = [
        {"url": f"{site.base}/{n}", "status": 200, "body": h.encode(), "content_type": "text/html"}
        for n, h in pages
    ]
    told = {"allow_private_networks": True, "delay": 0.0}  # a crawl of a loopback site
    return write_crawl(tmp_path_factory.mktemp("crawl") / "crawl", rows, crawl_config=told)


class Killed(Exception):
    """Stands for a kill of the render process."""


def _killed_after(monkeypatch, n: int) -> None:
    """Journal `n` pages, then 'kill' the render as it commits the next one. Later commits go
    through: the pages still in flight must be cancelled, not journaled with the error the
    browser closing under them gives."""
    real, seen = RenderJournal.record, []

    def record(self, key, outcome):
        seen.append(outcome.url)
        if len(seen) == n + 1:
            raise Killed(outcome.url)
        real(self, key, outcome)

    monkeypatch.setattr(RenderJournal, "record", record)


def _journaled(out: Path) -> dict[str, RenderOutcome]:
    con = sqlite3.connect(out / JOURNAL_FILE)
    try:
        rows = con.execute("SELECT url, outcome FROM pages").fetchall()
    finally:
        con.close()
    return {url: _decode_outcome(blob) for url, blob in rows}


def _api_hits(site, since: int) -> list[str]:
    return [p.rsplit("/", 1)[1] for p in site.paths()[since:] if p.startswith("/api/")]


def _comparable(row: dict) -> dict:
    """A row without what differs between two renders of one page (DOM bytes, timing, where)."""
    skip = {"html", "render_ms", "warc_file", "warc_offset", "warc_length"}
    out = {k: v for k, v in row.items() if k not in skip}
    out["text"] = text_of(row["html"]) if row["rendered"] else row["html"]
    return out


def test_a_killed_render_resumes_without_loss_or_duplication(
    site, crawl, tmp_path, monkeypatch, no_browser_leak
):
    ref_out = tmp_path / "reference"
    ref = run_render(crawl, ref_out, "auto", **KW)
    assert ref["resumed_pages"] == 0 and ref["rendered"] == len(JS_PAGES)
    assert not (ref_out / JOURNAL_FILE).exists()  # the journal goes once the output is written
    reference = pq.read_table(ref_out / "rendered.parquet").to_pylist()

    out = tmp_path / "render"
    with monkeypatch.context() as m:
        _killed_after(m, 2)
        with pytest.raises(Killed) as killed:
            run_render(crawl, out, "auto", pages_in_flight=2, **KW)
    assert not (out / "rendered.parquet").exists()
    done = _journaled(out)
    # The two before the kill, and at most a page that finished as the kill went through;
    # never the killed page, nor one the browser closing under it failed.
    assert 2 <= len(done) <= 3 and str(killed.value) not in done, done
    assert all(o.error is None and o.html for o in done.values()), done
    (first_warc,) = out.glob("render-*.warc.gz")
    with open(first_warc, "ab") as fh:  # a kill mid-write leaves a torn record at the end
        fh.write(b"\x1f\x8b\x08\x00torn")
    torn_size = first_warc.stat().st_size

    before = len(site.log)
    summary = run_render(crawl, out, "auto", pages_in_flight=1, **KW)  # concurrency may change
    hits = _api_hits(site, before)
    assert summary["resumed_pages"] == len(done) and summary["rendered"] == len(JS_PAGES)
    assert summary["render_errors"] == 0, summary
    finished = {u.rsplit("/", 1)[1] for u in done}
    assert not finished & set(hits)  # the finished pages were not fetched again
    assert sorted(hits) == sorted(set(JS_PAGES) - finished)  # the rest once each
    assert not (out / JOURNAL_FILE).exists()

    rows = pq.read_table(out / "rendered.parquet").to_pylist()
    assert [_comparable(r) for r in rows] == [_comparable(r) for r in reference]
    # The resumed rows are the journaled outcomes, pointing at the first run's whole batches;
    # the rest went to a new WARC file, not after the torn record.
    assert first_warc.stat().st_size == torn_size
    for row in rows:
        if not row["rendered"]:
            continue
        if row["url"] in done:
            o = done[row["url"]]
            assert (row["html"], row["render_ms"]) == (o.html, o.render_ms)
            assert row["warc_file"] == first_warc.name
        else:
            assert row["warc_file"] != first_warc.name
        page = read_page(out / row["warc_file"], row["warc_offset"], row["warc_length"])
        assert page.page_url == row["url"]


def test_a_journal_of_other_settings_is_discarded(
    site, crawl, tmp_path, monkeypatch, caplog, no_browser_leak
):
    out = tmp_path / "render"
    with monkeypatch.context() as m:
        _killed_after(m, 2)
        with pytest.raises(Killed):
            run_render(crawl, out, "auto", pages_in_flight=1, **KW)
    assert len(_journaled(out)) == 2
    before = len(site.log)
    with caplog.at_level(logging.WARNING, logger="crawlers.render.crawl"):
        summary = run_render(crawl, out, "auto", pages_in_flight=1, **{**KW, "page_timeout_s": 15})
    assert summary["resumed_pages"] == 0 and summary["rendered"] == len(JS_PAGES)
    assert sorted(_api_hits(site, before)) == sorted(JS_PAGES)  # every page rendered again
    (line,) = [r.getMessage() for r in caplog.records if "discarding the journal" in r.getMessage()]
    assert "page_timeout_s 20 -> 15" in line


def _outcome(url: str, archive: ArchiveLocation | None = None) -> RenderOutcome:
    return RenderOutcome(url, f"<p>{url}</p>", 5, subresources=[{"url": url}], archive=archive)


def test_the_journal_is_kept_only_for_the_same_crawl_and_whole_batches(tmp_path, caplog):
    """No browser: what a journal hands back to a later run, and when it hands nothing."""
    path, keys = tmp_path / JOURNAL_FILE, ["k1", "k2", "k3"]
    (tmp_path / "render-a.warc.gz").write_bytes(b"x" * 100)
    journal = RenderJournal(path, {"mode": "auto"}, tmp_path)
    assert journal.open(keys) == {}
    journal.record("k1", _outcome("u1", ArchiveLocation("render-a.warc.gz", 0, 100)))
    journal.record("k2", _outcome("u2", ArchiveLocation("render-a.warc.gz", 100, 50)))  # cut
    journal.record("k3", _outcome("u3", None))
    journal.record("k3b", RenderOutcome("u4", None, 0, error="browser unavailable: gone"))
    journal.close()

    again = RenderJournal(path, {"mode": "auto"}, tmp_path)
    with caplog.at_level(logging.WARNING, logger="crawlers.render.crawl"):
        done = again.open(keys)
    again.close()
    assert set(done) == {"k1", "k3"} and again.resumed == 2  # k2's batch is not whole on disk
    assert done["k1"] == _outcome("u1", ArchiveLocation("render-a.warc.gz", 0, 100))
    assert any("1 page(s) in the journal" in r.getMessage() for r in caplog.records)

    caplog.clear()
    other = RenderJournal(path, {"mode": "auto"}, tmp_path)
    with caplog.at_level(logging.WARNING, logger="crawlers.render.crawl"):
        assert other.open(["k1", "k3", "k4"]) == {}  # another crawl: nothing mixed in
    other.close()
    assert any("written for another crawl" in r.getMessage() for r in caplog.records)
    last = RenderJournal(path, {"mode": "auto"}, tmp_path)
    assert last.open(["k1", "k3", "k4"]) == {}
    last.remove()
    assert not path.exists()
