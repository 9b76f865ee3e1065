"""One page, one URL, one consent: every spelling of a URL is one key for an import, and an
archived opt-out holds across the shards of an import (through the lake's consent ledger).

- `import warc`/`import wet`/`import docs` store and key URLs in the crawler's canonical form
  (`crawlers.imports.warc.page_url`), so a later capture's noai under another spelling (IDN or
  punycode, a trailing dot, a percent-encoded host or path, capitals, a fragment) is carried to
  the capture kept.
- Sharded imports (`--shard K/N`, the Dagster partitions) append their archived opt-outs to the
  lake's ledger, so `common.consent.Consent` refuses the copy another shard allowed, whichever
  shard ran first, and a robots.txt recheck does not lift them.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from warcio.warcwriter import WARCWriter

from crawlers.imports.run import import_warc, shard_of
from crawlers.imports.warc import page_url
from tests.imports.archives import ALLOW, TEST_CONFIG, base, page, response, write_warc

HTML = [("Content-Type", "text/html")]
NOAI = [*HTML, ("X-Robots-Tag", "noai")]

# (the spelling captured first, with no opt-out; the spelling of a later capture that says noai)
OFFLINE_PAIRS = [
    ("http://xn--bcher-kva.example/a", "http://bücher.example/a"),
    ("http://bücher.example/b", "http://XN--BCHER-KVA.EXAMPLE/b"),
    ("http://example.org/c", "http://example.org./c"),
    ("http://example.org/d", "http://%65xample.org/d"),
    ("http://example.org/e", "http://EXAMPLE.ORG:80/e"),
    ("http://example.net/caf%C3%A9", "http://example.net/café"),
    ("http://example.net/page", "http://example.net/p%61ge"),
    ("http://example.net/q", "http://example.net/q#part"),
]


def test_page_url_is_the_canonical_form_and_falls_back_to_the_archived_one():
    for plain, other in OFFLINE_PAIRS:
        assert page_url(plain) == page_url(other), (plain, other)
        assert page_url(plain)[1] is None
    assert page_url("http://%65xample.org:8080/d") == ("http://example.org:8080/d", None)
    # a decoded host that would move the host's end is not decoded: kept as archived, with why
    url, why = page_url("http://a%2Fb.example/x")
    assert url == "http://a%2fb.example/x" and "bad host name" in why
    url, why = page_url("HTTP://host:bad/p#f")
    assert url == "http://host:bad/p#f" and "Port" in why  # does not parse: as archived
    assert page_url("dns:Example.COM") == ("dns:Example.COM", None)  # not http(s): as archived


def test_every_spelling_of_a_url_is_one_page_and_the_later_noai_is_carried(tmp_path):
    """Offline: the pair's second capture (noai) is a repeat of the first, whose row takes the
    noai; the row's url and host are the canonical ones."""

    def fill(w):
        for plain, other in OFFLINE_PAIRS:
            response(w, plain, page("plain " + plain))
            response(w, other, page("opted out " + other), NOAI)

    src = write_warc(tmp_path / "spell.warc.gz", fill)
    out = tmp_path / "out"
    s = import_warc([str(src)], out, offline=True)
    pages = pq.read_table(out / "pages.parquet").to_pylist()
    assert s["pages"] == len(OFFLINE_PAIRS), [p["url"] for p in pages]
    for row in pages:
        assert row["noai"] is True and row["training_allowed"] is False, row["url"]
        assert "another capture (" in row["consent_source"], row["consent_source"]
    by_url = {r["url"]: r for r in pages}
    assert "http://xn--bcher-kva.example/a" in by_url and "http://example.net/caf%C3%A9" in by_url
    assert by_url["http://example.org/d"]["host"] == "example.org"
    skipped = pq.read_table(out / "skipped.parquet").to_pylist()
    assert [r["skip_reason"] for r in skipped] == ["duplicate_url"] * len(OFFLINE_PAIRS)


def test_a_url_with_no_canonical_form_is_kept_as_archived_and_a_skip_says_why(tmp_path):
    def fill(w):
        response(w, "http://a%2Fb.example/x", page("odd host"))
        response(w, "http://a%2Fb.example/x", page("odd host 404"), status="404 Not Found")

    src = write_warc(tmp_path / "odd.warc.gz", fill)
    out = tmp_path / "out"
    import_warc([str(src)], out, offline=True)
    (row,) = pq.read_table(out / "pages.parquet").to_pylist()
    assert row["url"] == "http://a%2fb.example/x" and row["training_allowed"] is False
    (skip,) = pq.read_table(out / "skipped.parquet").to_pylist()
    assert "URL kept as archived, it has no canonical form" in skip["skip_detail"]


def test_with_robots_the_plain_capture_is_not_allowed_when_another_spelling_says_noai(
    tmp_path, robots
):
    a = base(ALLOW, robots.port)
    dotted = f"HTTP://{ALLOW}.:{robots.port}"

    def fill(w):
        response(w, f"{a}/carry1", page("carry one plain"))
        response(w, f"{dotted}/carry1#top", page("carry one later"), NOAI)
        response(w, f"{a}/free", page("free page"))

    src = write_warc(tmp_path / "c.warc.gz", fill)
    out = tmp_path / "out"
    import_warc([str(src)], out, config=TEST_CONFIG)
    pages = {r["url"]: r for r in pq.read_table(out / "pages.parquet").to_pylist()}
    assert set(pages) == {f"{a}/carry1", f"{a}/free"}
    assert pages[f"{a}/carry1"]["training_allowed"] is False
    assert pages[f"{a}/free"]["training_allowed"] is True


def _wet(path: Path, records: list[tuple[str, str]]) -> Path:
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for url, text in records:
            rec = w.create_warc_record(
                url, "conversion", payload=io.BytesIO(text.encode()), warc_content_type="text/plain"
            )
            w.write_record(rec)
    return path


def test_wet_spellings_of_a_url_are_one_document(tmp_path):
    from crawlers.extract.page import doc_id
    from crawlers.imports.wet import import_wet

    src = _wet(
        tmp_path / "a.warc.wet.gz",
        [
            ("http://bücher.example/a", "first capture text of the page"),
            ("HTTP://XN--BCHER-KVA.EXAMPLE./a#x", "second capture text of the page"),
        ],
    )
    out = tmp_path / "out"
    s = import_wet([str(src)], out, offline=True)
    (doc,) = pq.read_table(out / "documents.parquet").to_pylist()
    assert s["documents"] == 1 and doc["url"] == "http://xn--bcher-kva.example/a"
    assert doc["id"] == doc_id("http://xn--bcher-kva.example/a")
    assert doc["host"] == "xn--bcher-kva.example"
    (skip,) = pq.read_table(out / "skipped.parquet").to_pylist()
    assert skip["skip_reason"] == "duplicate_id"


def _corpus(path: Path, a: str) -> Path:
    """One page in two URL spellings: the first row has no opinion, a later row says no."""
    host = a.removeprefix("http://")
    rows = [
        {"text": "First capture of the page about apples. " * 5, "url": f"{a}/apples"},
        {
            "text": "Second capture of the page about apples, now opted out. " * 5,
            "url": f"HTTP://{host}/apples",
            "metadata": {"training_allowed": False},
        },
        {"text": "First capture of pears. " * 5, "url": f"{a}/pears"},
        {"text": "Second capture of pears, opted out. " * 5, "url": f"{a}/pears#s", "noai": True},
        {"text": "Plums, no opinion. " * 5, "url": f"{a}/plums"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_docs_spellings_of_a_url_are_one_document_and_its_no_is_carried(tmp_path, robots):
    """`import docs`: the id made from a URL, and the key an opt-out is carried by, are the
    URL's canonical form: `HTTP://h/apples` repeats `http://h/apples`, `/pears#s` `/pears`."""
    from crawlers.extract.page import doc_id
    from crawlers.imports.docs import import_docs

    a = base(ALLOW, robots.port)
    src = _corpus(tmp_path / "c.jsonl", a)
    out = tmp_path / "out"
    import_docs([str(src)], out, config=TEST_CONFIG)
    docs = {r["url"]: r for r in pq.read_table(out / "documents.parquet").to_pylist()}
    assert set(docs) == {f"{a}/apples", f"{a}/pears", f"{a}/plums"}
    assert docs[f"{a}/apples"]["training_allowed"] is False
    assert docs[f"{a}/pears"]["training_allowed"] is False
    assert docs[f"{a}/pears"]["noai"] is True
    assert docs[f"{a}/plums"]["training_allowed"] is True
    assert all(d["id"] == doc_id(u) for u, d in docs.items())
    # the corpus's own ids (--id-field): two documents, and the no of one spelling reaches both
    rows = [json.loads(line) for line in src.read_text().splitlines()]
    for i, r in enumerate(rows):
        r["doc"] = f"d{i}"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    import_docs([str(src)], tmp_path / "ids", id_field="doc", config=TEST_CONFIG)
    docs = {r["id"]: r for r in pq.read_table(tmp_path / "ids" / "documents.parquet").to_pylist()}
    assert {k: d["training_allowed"] for k, d in docs.items()} == {
        "d0": False,
        "d1": False,
        "d2": False,
        "d3": False,
        "d4": True,
    }
    # a document keeps its URL as the corpus spells it; its host is the canonical one
    host = a.removeprefix("http://")
    assert docs["d1"]["url"] == f"HTTP://{host}/apples" and docs["d3"]["url"] == f"{a}/pears#s"
    assert docs["d1"]["host"] == ALLOW


def _shard_files(tmp_path: Path, shards: int) -> tuple[Path, Path]:
    """Two WARC names of different shards (`shard_of` their resolved paths)."""
    (tmp_path / "in").mkdir()
    names = [tmp_path / "in" / f"crawl-{i:03d}.warc.gz" for i in range(64)]
    first = next(p for p in names if shard_of(str(p.resolve()), shards) == 0)
    other = next(p for p in names if shard_of(str(p.resolve()), shards) == 1)
    return first, other


def _documents(lake: Path) -> list[dict]:
    """What `refinery extract` makes of the lake's crawl shards (documents.parquet rows),
    written where the consent recheck reads them."""
    import pyarrow as pa

    from crawlers.extract.crawl_io import iter_crawl_records
    from crawlers.extract.page import extract_page

    docs = []
    for shard in sorted((lake / "crawl").glob("shard=import-*")):
        for record in iter_crawl_records(shard):
            doc = extract_page(record).document
            if doc is not None:
                docs.append({k: doc[k] for k in ("id", "url", "host", "text", "training_allowed")})
    (lake / "extract").mkdir(exist_ok=True)
    pq.write_table(pa.Table.from_pylist(docs), lake / "extract" / "documents.parquet")
    return docs


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_an_archived_opt_out_holds_across_shards_in_either_order(tmp_path, robots, order):
    """Shard 0 holds a plain capture of /article (allowed there), shard 1 a later noai capture
    of it. Whichever runs first, the lake's ledger opts the URL out, the
    documents extracted from both shards are refused by `Consent`, a re-run appends nothing and
    a robots.txt recheck that allows the URL does not lift it."""
    from common.consent import Consent, ledger_files
    from crawlers.consent import ARCHIVED, recheck
    from crawlers.extract.page import doc_id
    from pipelines.stage import Lake
    from pipelines.stages.imports import IMPORT_SHARDS, ImportWarcParams
    from pipelines.stages.imports import import_warc as stage_import

    a = base(ALLOW, robots.port)
    url = f"{a}/article"
    first, other = _shard_files(tmp_path, IMPORT_SHARDS)
    write_warc(
        first,
        lambda w: (
            response(w, url, page("Article first capture")),
            response(w, f"{a}/free", page("Free page")),
        ),
    )
    write_warc(other, lambda w: response(w, url, page("Later"), NOAI))
    lake = tmp_path / "lake"
    params = ImportWarcParams(
        files=[str(tmp_path / "in" / "*.warc.gz")], allow_private_networks=True, delay=0.0
    )
    for k in order:
        stage_import(params, Lake(root=lake, partition=str(k)))
    shard0 = pq.read_table(lake / "crawl" / "shard=import-0" / "pages.parquet").to_pylist()
    assert {r["url"]: r["training_allowed"] for r in shard0} == {url: True, f"{a}/free": True}
    docs = _documents(lake)
    assert sorted((d["url"], d["training_allowed"]) for d in docs) == [
        (url, False),
        (url, True),
        (f"{a}/free", True),
    ]
    consent = Consent.load(lake)
    kept, refused = consent.keep(docs)
    assert [d["url"] for d in kept] == [f"{a}/free"]
    assert len(refused) == 2 and {d["url"] for d, _ in refused} == {url}
    # the mixture builder's reader (its SQL) honours the same ledger: only the free page's text
    from training.mixture.sources import ReadUnit, read_unit

    files = tuple(str(f) for f in ledger_files(lake))
    docs_file = str(lake / "extract" / "documents.parquet")
    unit = ReadUnit("b", 0, docs_file, None, "text", None, (), consent=files)
    texts = read_unit(unit)[0].to_pylist()
    assert len(texts) == 1 and "Free page" in texts[0]

    (ledger,) = ledger_files(lake)
    (row,) = pq.read_table(ledger).to_pylist()
    assert row["url"] == url and row["training_allowed"] is False
    assert row["doc_ids"] == [doc_id(url)] and row["robots_kind"] == ARCHIVED
    assert "X-Robots-Tag noai" in row["rule"]

    # a re-run of the opted-out shard appends nothing
    again = stage_import(params, Lake(root=lake, partition="1"))
    assert again.details["consent_ledger_rows"] == 0 and len(ledger_files(lake)) == 1
    # robots.txt allows the training token now: the recheck does not lift the archive's no
    result = recheck(lake, TEST_CONFIG)
    assert result.re_allowed == 0
    assert [d["url"] for d in Consent.load(lake).keep(docs)[0]] == [f"{a}/free"]


def test_a_recheck_does_not_lift_an_archived_opt_out(tmp_path, robots):
    """A ledger row for an archived noai (`robots_kind = 'archived'`) stays the last word on its
    URL when robots.txt allows it: no `true` row is appended."""
    import pyarrow as pa

    from common.consent import Consent, append_ledger, ledger_files
    from crawlers.consent import recheck
    from crawlers.extract.page import doc_id

    a = base(ALLOW, robots.port)
    url = f"{a}/held"
    lake = tmp_path / "lake"
    (lake / "extract").mkdir(parents=True)
    docs = [{"id": doc_id(url), "url": url, "training_allowed": True}]
    pq.write_table(pa.Table.from_pylist(docs), lake / "extract" / "documents.parquet")
    append_ledger(
        lake,
        [
            {
                "checked_at": "2026-01-01T00:00:00Z",
                "host": ALLOW,
                "url": url,
                "doc_ids": [doc_id(url)],
                "training_allowed": False,
                "previous": None,
                "agent": "RefineryBot-Extended",
                "rule": "archived headers: X-Robots-Tag noai",
                "robots_kind": "archived",
            }
        ],
    )
    result = recheck(lake, TEST_CONFIG)
    assert result.re_allowed == 0 and result.file is None
    assert len(ledger_files(lake)) == 1
    assert not Consent.load(lake).allows(docs[0])
