"""`import warc`: pages and recorded skips, consent from today's robots.txt and the archived
opt-outs, provenance, dedup across files, malformed archives, resume, extraction unchanged."""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crawlers.imports.run import import_warc
from tests.imports.archives import (
    ALLOW,
    DENY_TRAINING,
    DOWN,
    NO_ROBOTS,
    TEST_CONFIG,
    base,
    chunked,
    page,
    request,
    response,
    whole_file_gzip,
    write_warc,
)


def _archives(tmp: Path, port: int) -> dict[str, Path]:
    a, d, n, x = (base(ip, port) for ip in (ALLOW, DENY_TRAINING, NO_ROBOTS, DOWN))
    digests = {}

    def first(w):
        request(w, f"{a}/one")
        digests["one"] = response(w, f"{a}/one", page("One"))
        response(
            w,
            f"{a}/xrobots",
            page("Xrobots"),
            [("Content-Type", "text/html"), ("X-Robots-Tag", "noai")],
        )
        response(w, f"{n}/meta", page("Meta", '<meta name="robots" content="noindex, noai">'))
        response(w, f"{d}/denied", page("Denied"))
        response(w, f"{x}/down", page("Down"))
        response(w, f"{a}/logo.png", b"\x89PNG....", [("Content-Type", "image/png")])
        body = chunked(gzip.compress(page("Chunked")))
        response(
            w,
            f"{a}/chunked",
            body,
            [
                ("Content-Type", "text/html"),
                ("Transfer-Encoding", "chunked"),
                ("Content-Encoding", "gzip"),
            ],
        )
        response(w, None, page("Nameless"))
        response(w, f"{a}/gone", page("Gone"), status="404 Not Found")
        w.write_record(
            w.create_revisit_record(f"{a}/one", digests["one"], f"{a}/one", "2020-01-01T00:00:00Z")
        )
        w.write_record(
            w.create_revisit_record(
                f"{a}/lost",
                "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                f"{a}/lost",
                "2020-01-01T00:00:00Z",
            )
        )

    def second(w):  # uncompressed: a repeat payload, a wrong Content-Length, then a good page
        response(w, f"{a}/one-again", page("One"))
        response(w, f"{a}/bad-length", page("Bad length"))
        response(w, f"{a}/after", page("After"))

    files = {"first": write_warc(tmp / "a.warc.gz", first)}
    plain = write_warc(tmp / "b.warc", second, gz=False)
    raw = plain.read_bytes()
    i = raw.index(b"bad-length")
    j = raw.index(b"Content-Length: ", i) + len(b"Content-Length: ")
    k = raw.index(b"\r\n", j)
    raw = raw[:j] + str(int(raw[j:k]) - 40).encode() + raw[k:]  # says 40 bytes less than it has
    plain.write_bytes(raw)
    files["second"] = plain

    def third(w):
        response(w, f"{a}/third-1", page("Third one"))
        response(w, f"{a}/third-2", page("Third two"))
        response(w, f"{a}/third-cut", page("Third cut"))

    cut = write_warc(tmp / "c.warc.gz", third)
    data = cut.read_bytes()
    cut.write_bytes(data[: len(data) - 300])  # the last gzip member is cut short
    files["cut"] = cut

    def fourth(w):
        response(w, f"{a}/whole-gzip", page("Whole gzip"))
        response(w, f"{a}/whole-gzip-2", page("Whole gzip two"))

    files["whole"] = whole_file_gzip(
        write_warc(tmp / "w.warc", fourth, gz=False), tmp / "w.warc.gz"
    )
    (tmp / "w.warc").unlink()
    return files


def test_import_decides_consent_records_every_record_and_extract_reads_it(tmp_path, robots):
    (tmp_path / "in").mkdir()
    files = _archives(tmp_path / "in", robots.port)
    out = tmp_path / "import"
    s = import_warc(
        [str(tmp_path / "in" / "*.warc*")], out, config=TEST_CONFIG, max_record_bytes=1 << 20
    )
    pages = {
        r["url"].split("/", 3)[-1]: r for r in pq.read_table(out / "pages.parquet").to_pylist()
    }
    skipped = pq.read_table(out / "skipped.parquet").to_pylist()
    reasons = {}
    for r in skipped:
        reasons.setdefault(r["skip_reason"], []).append(r)
    # rows in = pages + skipped with reasons
    assert s["records"] == len(pages) + len(skipped) == s["pages"] + s["skipped"]
    assert set(pages) == {
        "one", "xrobots", "meta", "denied", "down", "chunked", "after", "third-1", "third-2",
        "whole-gzip", "whole-gzip-2",
    }  # fmt: skip
    for reason in (
        "request", "not_html", "missing_target_uri", "http_status", "revisit",
        "revisit_missing_original", "duplicate_payload", "malformed_record",
    ):  # fmt: skip
        assert reason in reasons, (reason, sorted(reasons))
    assert reasons["duplicate_payload"][0]["url"].endswith("/one-again")
    assert reasons["revisit_missing_original"][0]["url"].endswith("/lost")
    bad_length = [r for r in skipped if (r["url"] or "").endswith("/bad-length")]
    assert bad_length and bad_length[0]["skip_reason"] in ("digest_mismatch", "short_record")
    cut = [r for r in skipped if r["source_file"].endswith("c.warc.gz")]
    assert cut and cut[-1]["skip_reason"] in ("malformed_record", "short_record", "digest_mismatch")
    # consent: the boolean true only when today's robots.txt and the archived page allow it
    allowed = {k for k, r in pages.items() if r["training_allowed"] is True}
    assert allowed == {
        "one",
        "chunked",
        "after",
        "third-1",
        "third-2",
        "whole-gzip",
        "whole-gzip-2",
    }
    assert "archived headers: X-Robots-Tag noai" in pages["xrobots"]["consent_source"]
    assert "archived meta: robots noai" in pages["meta"]["consent_source"]
    assert pages["meta"]["noindex"] and pages["meta"]["noai"]
    assert pages["denied"]["robots_training"] == "disallowed"
    assert pages["denied"]["robots_crawl"] == "allowed"
    assert "Disallow: /" in pages["denied"]["consent_source"]
    assert pages["down"]["robots_training"] == "unreachable"
    assert pages["down"]["training_allowed"] is False
    assert "robots.txt at import: allowed" in pages["one"]["consent_source"]
    assert pages["one"]["robots_sha256"] and pages["one"]["robots_fetched_at"]
    hosts = {h["origin"]: h for h in pq.read_table(out / "hosts.parquet").to_pylist()}
    assert len(hosts) == 4 and all(h["decided"] for h in hosts.values())
    assert hosts[base(DOWN, robots.port)]["unreachable"]
    assert hosts[base(NO_ROBOTS, robots.port)]["robots_status"] == 404
    # provenance, and where the bytes are: referenced in place, copied only from whole gzip
    one = pages["one"]
    assert one["warc_file"] == str(files["first"].resolve()) and one["import_mode"] == "referenced"
    assert one["warc_record_id"].startswith("<urn:uuid:") and one["capture_time"]
    assert one["record_offset"] == one["warc_offset"] and one["fetched_at"] == one["capture_time"]
    assert pages["whole-gzip"]["warc_file"].startswith("warc/")
    assert pages["whole-gzip"]["import_mode"].startswith("copied: whole-file gzip")
    assert not list((out / "warc").glob("*a.warc.gz*"))  # nothing copied from the seekable file
    # extraction reads the import unchanged: every page is a document
    from crawlers.extract.crawl_io import iter_crawl_records
    from crawlers.extract.page import extract_page

    docs = {}
    for record in iter_crawl_records(out):
        result = extract_page(record)
        assert result.reject is None, (record["url"], result.reject)
        docs[record["url"].split("/", 3)[-1]] = result.document
    assert set(docs) == set(pages)
    assert "Chunked sentence number 3" in docs["chunked"]["text"]
    assert "Whole gzip sentence" in docs["whole-gzip"]["text"]
    assert docs["one"]["training_allowed"] is True and docs["denied"]["training_allowed"] is False
    # resume: finished files are not read again; the outputs are the same
    hits = dict(robots.hits)
    again = import_warc(
        [str(tmp_path / "in" / "*.warc*")], out, config=TEST_CONFIG, max_record_bytes=1 << 20
    )
    assert again["files_scanned"] == 0 and again["files_resumed"] == 4
    assert again["pages"] == s["pages"] and again["records"] == s["records"]
    assert sum(robots.hits.values()) > sum(hits.values())  # consent is decided today, again


def test_offline_marks_every_row_not_consented_and_fetches_nothing(tmp_path, robots):
    src = write_warc(
        tmp_path / "o.warc.gz", lambda w: response(w, f"{base(ALLOW, robots.port)}/o", page("O"))
    )
    before = dict(robots.hits)
    s = import_warc([str(src)], tmp_path / "out", config=TEST_CONFIG, offline=True)
    rows = pq.read_table(tmp_path / "out" / "pages.parquet").to_pylist()
    assert s["offline"] and s["training_allowed"] == 0 and len(rows) == 1
    assert rows[0]["training_allowed"] is False
    assert rows[0]["consent_source"].startswith("offline: robots.txt not fetched (--offline)")
    assert robots.hits == before


def test_oversized_record_is_streamed_past_and_skipped(tmp_path, robots):
    big = b"<html><body>" + b"x" * 400_000 + b"</body></html>"
    a = base(ALLOW, robots.port)

    def fill(w):
        response(w, f"{a}/big", big)
        response(w, f"{a}/small", page("Small"))

    src = write_warc(tmp_path / "big.warc.gz", fill)
    s = import_warc([str(src)], tmp_path / "out", config=TEST_CONFIG, max_record_bytes=100_000)
    skipped = pq.read_table(tmp_path / "out" / "skipped.parquet").to_pylist()
    assert [r["skip_reason"] for r in skipped] == ["too_large"]
    assert "100000" in skipped[0]["skip_detail"]
    assert s["pages"] == 1


def test_a_bomb_body_is_a_skip_not_a_crash(tmp_path, robots):
    bomb = zlib.compress(b"<html>" + b"a" * 5_000_000, 9)
    src = write_warc(
        tmp_path / "bomb.warc.gz",
        lambda w: response(
            w,
            f"{base(ALLOW, robots.port)}/bomb",
            bomb,
            [("Content-Type", "text/html"), ("Content-Encoding", "deflate")],
        ),
    )
    s = import_warc([str(src)], tmp_path / "out", config=TEST_CONFIG, max_record_bytes=1 << 20)
    skipped = pq.read_table(tmp_path / "out" / "skipped.parquet").to_pylist()
    assert s["pages"] == 0 and skipped[0]["skip_reason"] == "too_large"


def test_a_pattern_matching_nothing_is_one_line_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        import_warc([str(tmp_path / "nothing-here*.warc.gz")], tmp_path / "out", offline=True)


def _arc(path: Path, url: str, body: bytes) -> Path:
    """A one-record ARC v1 file (no library writes ARC)."""
    http = b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n" + body
    desc = b"1 0 Test\nURL IP-address Archive-date Content-type Archive-length\n"
    head = b"filedesc://t.arc 0.0.0.0 20200101000000 text/plain %d\n" % len(desc)
    rec = f"{url} 127.0.0.2 20200102030405 text/html {len(http)}\n".encode()
    path.write_bytes(head + desc + b"\n" + rec + http + b"\n")
    return path


def test_arc_is_converted_and_copied_and_a_killed_import_redoes_only_unfinished_files(
    tmp_path, robots
):
    a = base(ALLOW, robots.port)
    arc = _arc(tmp_path / "old.arc", f"{a}/arc-page", page("Arc page"))
    warc = write_warc(tmp_path / "new.warc.gz", lambda w: response(w, f"{a}/warc-page", page("W")))
    out = tmp_path / "out"
    s = import_warc([str(arc), str(warc)], out, config=TEST_CONFIG)
    pages = {
        r["url"].rsplit("/", 1)[1]: r for r in pq.read_table(out / "pages.parquet").to_pylist()
    }
    assert s["pages"] == 2 and pages["arc-page"]["training_allowed"] is True
    assert pages["arc-page"]["import_mode"].startswith("copied: ARC file")
    assert pages["arc-page"]["capture_time"] == "2020-01-02T03:04:05Z"
    from crawlers.extract.crawl_io import iter_crawl_records
    from crawlers.extract.page import extract_page

    texts = {r["url"]: extract_page(r).document["text"] for r in iter_crawl_records(out)}
    assert "Arc page sentence number 7" in texts[f"{a}/arc-page"]
    # a kill after the first file: its done marker stays, the second file's part is gone
    from crawlers.imports.run import file_key

    (out / "parts" / f"{file_key(str(warc.resolve()))}.done.json").unlink()
    again = import_warc([str(arc), str(warc)], out, config=TEST_CONFIG)
    assert again["files_scanned"] == 1 and again["files_resumed"] == 1
    assert again["pages"] == 2
    # other scan options (the training token decides which meta tags apply): read again
    other = import_warc([str(arc), str(warc)], out, config={**TEST_CONFIG, "training_agent": "X"})
    assert other["files_scanned"] == 2
    # a changed file is read again (its marker no longer matches size and mtime)
    write_warc(warc, lambda w: response(w, f"{a}/warc-page-2", page("W2")))
    third = import_warc([str(arc), str(warc)], out, config=TEST_CONFIG)
    assert third["files_scanned"] == 2  # the changed file, and the other one read with "X"
    assert {r["url"].rsplit("/", 1)[1] for r in pq.read_table(out / "pages.parquet").to_pylist()} == {
        "arc-page", "warc-page-2",
    }  # fmt: skip


def test_an_fsspec_url_is_read_and_its_records_copied(tmp_path, robots):
    import fsspec

    a = base(ALLOW, robots.port)
    local = write_warc(tmp_path / "r.warc.gz", lambda w: response(w, f"{a}/remote", page("Remote")))
    with fsspec.open("memory://bucket/r.warc.gz", "wb") as fh:
        fh.write(local.read_bytes())
    out = tmp_path / "out"
    s = import_warc(["memory://bucket/*.warc.gz"], out, config=TEST_CONFIG)
    (row,) = pq.read_table(out / "pages.parquet").to_pylist()
    assert s["pages"] == 1 and row["source_file"].startswith("memory://")
    assert row["import_mode"].startswith("copied: remote file") and row["warc_file"].startswith(
        "warc/"
    )
    from crawlers.extract.crawl_io import iter_crawl_records
    from crawlers.extract.page import extract_page

    (record,) = iter_crawl_records(out)
    assert "Remote sentence number 1" in extract_page(record).document["text"]


def test_a_stream_that_cannot_seek_is_read_once_and_copied(tmp_path, monkeypatch):
    """A non-seekable source (a pipe, an HTTP body): read as a stream, whole-file gzip too."""
    import crawlers.imports.warc as warc_mod

    class Pipe(io.RawIOBase):
        def __init__(self, data: bytes):
            self._buf = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def seekable(self) -> bool:
            return False

        def readinto(self, b) -> int:
            data = self._buf.read(len(b))
            b[: len(data)] = data
            return len(data)

    def fill(w):
        response(w, "http://127.0.0.2:9/s1", page("Stream one"))
        response(w, "http://127.0.0.2:9/s2", page("Stream two"))

    plain = write_warc(tmp_path / "s.warc", fill, gz=False)
    whole = whole_file_gzip(plain, tmp_path / "s.warc.gz")
    monkeypatch.setattr(warc_mod, "is_remote", lambda path: True)
    monkeypatch.setattr(warc_mod, "open_source", lambda path, *_: Pipe(Path(path).read_bytes()))
    for src in (plain, whole):
        rows = warc_mod.scan_file(str(src), warc_mod.ScanOptions(), tmp_path / "warc", src.name)
        pages = [r for r in rows if r["kind"] == "page"]
        assert [r["url"][-2:] for r in pages] == ["s1", "s2"], rows
        assert all(r["warc_file"] == f"warc/{src.name}.warc.gz" for r in pages)


def test_a_payload_digest_alone_does_not_refuse_a_page(tmp_path):
    """Archivers differ on what the payload digest covers; only the block digest refuses."""
    from crawlers.imports import warc as warc_mod

    def fill(w):
        response(w, "http://127.0.0.2:9/p", page("Payload"))

    src = write_warc(tmp_path / "p.warc", fill, gz=False)
    raw = src.read_bytes()
    i = raw.index(b"WARC-Payload-Digest: sha1:") + len(b"WARC-Payload-Digest: sha1:")
    src.write_bytes(raw[:i] + b"A" * 32 + raw[i + 32 :])  # a wrong payload digest, block intact
    rows = warc_mod.scan_file(str(src), warc_mod.ScanOptions(), tmp_path / "w", "p")
    assert [r["kind"] for r in rows] == ["page"]
    src.write_bytes(raw.replace(b"WARC-Payload-Digest: sha1:", b"WARC-Payload-Digest: nope:"))
    rows = warc_mod.scan_file(str(src), warc_mod.ScanOptions(), tmp_path / "w", "p")
    assert [r["kind"] for r in rows] == ["page"]  # an unknown algorithm is no evidence


def test_the_same_body_under_another_payload_digest_is_still_a_repeat(tmp_path):
    """One archiver's payload digest covers the chunked body, another's the plain one: the
    decoded body's sha256 still finds the repeat."""
    body = page("Same body")
    a = write_warc(tmp_path / "a.warc.gz", lambda w: response(w, "http://127.0.0.2:9/a", body))
    b = write_warc(
        tmp_path / "b.warc.gz",
        lambda w: response(
            w,
            "http://127.0.0.2:9/b",
            chunked(body),
            [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")],
        ),
    )
    s = import_warc([str(a), str(b)], tmp_path / "out", offline=True)
    skipped = pq.read_table(tmp_path / "out" / "skipped.parquet").to_pylist()
    assert s["pages"] == 1 and [r["skip_reason"] for r in skipped] == ["duplicate_payload"]


def test_an_empty_gzip_member_at_the_end_is_no_skip(tmp_path):
    src = write_warc(
        tmp_path / "e.warc.gz", lambda w: response(w, "http://127.0.0.2:9/e", page("E"))
    )
    with open(src, "ab") as fh:
        fh.write(gzip.compress(b"") + gzip.compress(b"\r\n\r\n"))
    s = import_warc([str(src)], tmp_path / "out", offline=True)
    assert s["pages"] == 1 and s["skipped"] == 0
    with open(src, "ab") as fh:
        fh.write(gzip.compress(b"WARC/1.1\r\nWARC-Type: resp"))  # a member cut inside a header
    s = import_warc([str(src)], tmp_path / "out2", offline=True)
    # warcio reads the cut header as a record of type 'resp': one recorded skip either way
    assert s["pages"] == 1 and s["skipped"] == 1
    assert set(s["skipped_by_reason"]) <= {"malformed_record", "record_type"}


def test_a_rerun_killed_while_scanning_leaves_no_previous_outputs_read_as_whole(tmp_path):
    """The outputs are written from the parts at a run's end: a re-run over more files, killed
    while it scans them, leaves no earlier run's pages.parquet (of fewer files) that extract
    would read as this import; extract refuses the unfinished import instead."""
    from common.inputs import InputError
    from common.manifest import manifest_path
    from crawlers.extract.warc import find_pages_files

    (tmp_path / "in").mkdir()
    for name in ("a", "b"):
        write_warc(
            tmp_path / "in" / f"{name}.warc.gz",
            lambda w, name=name: response(w, f"http://127.0.0.1:9/{name}", page(name)),
        )
    out = tmp_path / "out"
    import_warc([str(tmp_path / "in" / "a.warc.gz")], out, config=TEST_CONFIG, offline=True)
    assert manifest_path(out / "pages.parquet").exists()

    def killed(units, out_dir, opts):
        raise KeyboardInterrupt  # the process dies while it scans the new file

    with pytest.raises(KeyboardInterrupt):
        import_warc(
            [str(tmp_path / "in" / "*.warc.gz")],
            out,
            config=TEST_CONFIG,
            offline=True,
            scanner=killed,
        )
    for name in ("pages.parquet", "skipped.parquet", "hosts.parquet"):
        assert not (out / name).exists() and not manifest_path(out / name).exists()
    with pytest.raises(InputError, match="import"):
        find_pages_files(out)
