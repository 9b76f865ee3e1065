"""`import docs` on the layouts real corpora use: a document that names its page is never
consented by the licence alone, wherever the corpus keeps the URL (FineWeb's and C4's `url`,
Dolma's `metadata.url`, RedPajama's `meta.url`, OSCAR's `warc_headers`), and nested fields are
reached by dotted paths."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawlers.imports.docs import field_value, import_docs

TEXT = "A long enough document about rivers, mountains and the weather in spring. " * 4


def _rows(out) -> dict[str, dict]:
    return {r["id"]: r for r in pq.read_table(out / "documents.parquet").to_pylist()}


@pytest.mark.parametrize(
    ("layout", "row"),
    [
        ("fineweb", {"text": TEXT, "id": "a", "url": "https://example.com/a", "dump": "CC"}),
        ("dolma", {"text": TEXT, "id": "a", "metadata": {"url": "https://example.com/a"}}),
        ("redpajama", {"text": TEXT, "id": "a", "meta": {"url": "https://example.com/a"}}),
        (
            "oscar",
            {"text": TEXT, "id": "a", "warc_headers": {"warc-target-uri": "https://example.com/a"}},
        ),
        ("json-string meta", {"text": TEXT, "id": "a", "meta": '{"url": "https://example.com/a"}'}),
    ],
)
def test_a_document_with_a_url_anywhere_usual_goes_through_the_robots_check(tmp_path, layout, row):
    path = tmp_path / "c.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        fh.write(json.dumps(row) + "\n")
        fh.write(json.dumps({"text": TEXT + " no url", "id": "b"}) + "\n")
    import_docs([str(path)], tmp_path / "out", id_field="id", license="CC-BY-4.0", offline=True)
    docs = _rows(tmp_path / "out")
    assert docs["a"]["url"] == "https://example.com/a", layout
    assert docs["a"]["training_allowed"] is False and docs["a"]["consent_source"].startswith(
        "offline"
    )
    assert docs["b"]["training_allowed"] is True and docs["b"]["url"] is None


def test_dotted_fields_for_text_id_and_url_in_parquet(tmp_path):
    path = tmp_path / "c.parquet"
    pq.write_table(
        pa.Table.from_pylist(
            [{"doc": {"body": TEXT, "key": "k1"}, "meta": {"link": "https://example.org/1"}}]
        ),
        path,
    )
    import_docs(
        [str(path)],
        tmp_path / "out",
        text_field="doc.body",
        id_field="doc.key",
        url_field="meta.link",
        license="MIT",
        offline=True,
    )
    doc = _rows(tmp_path / "out")["k1"]
    assert doc["url"] == "https://example.org/1" and doc["training_allowed"] is False


def test_a_url_field_no_row_has_is_one_line_naming_the_file_and_the_flag(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"text": TEXT, "metadata": {"url": "https://example.com/x"}}) + "\n")
    with pytest.raises(
        KeyError, match=r"c\.jsonl: no row has the field 'metadata\.link' \(--url-field\)"
    ):
        import_docs([str(path)], tmp_path / "out", url_field="metadata.link", offline=True)
    assert not (tmp_path / "out" / "documents.parquet").exists()


def test_field_value_prefers_a_literal_key_with_dots():
    assert field_value({"a.b": 1, "a": {"b": 2}}, "a.b") == 1
    assert field_value({"a": {"b": 2}}, "a.b") == 2


def _write(path, data: bytes):
    import bz2
    import lzma

    import zstandard

    name = str(path)
    if name.endswith(".gz"):
        data = gzip.compress(data)
    elif name.endswith(".zst"):
        data = zstandard.ZstdCompressor().compress(data)
    elif name.endswith(".bz2"):
        data = bz2.compress(data)
    elif name.endswith(".xz"):
        data = lzma.compress(data)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst", ".jsonl.bz2", ".json.xz"])
def test_compressed_corpora_with_a_byte_order_mark_read_every_row(tmp_path, suffix):
    lines = "\n".join(json.dumps({"text": f"{TEXT} {i}", "id": f"r{i}"}) for i in range(5))
    path = _write(tmp_path / f"c{suffix}", b"\xef\xbb\xbf" + lines.encode())
    s = import_docs([str(path)], tmp_path / "out", id_field="id", license="MIT", offline=True)
    assert s["documents"] == 5 and s["skipped"] == 0, s


def test_a_json_array_file_is_read_as_rows(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps([{"text": TEXT, "id": "a"}, {"text": TEXT + "2", "id": "b"}, 3]))
    s = import_docs([str(path)], tmp_path / "out", id_field="id", license="MIT", offline=True)
    assert s["documents"] == 2 and s["skipped_by_reason"] == {"malformed_row": 1}


def test_a_lone_surrogate_escape_is_a_recorded_row_not_the_end_of_the_import(tmp_path):
    """JSON allows a lone \\ud800 escape (a cut through an emoji's UTF-16 pair leaves one);
    it is no Unicode text, and it ended the whole import at the first UTF-8 encode. Pairs
    that make a character, and the same escape text inside other strings, are fine."""
    rows = [
        '{"text": "T cut emoji \\ud83d", "id": "a"}',
        '{"text": "T whole emoji \\ud83d\\ude00", "id": "b"}',
        '{"text": "T", "id": "c", "meta": {"title": ["ok", "\\udc00"]}}',
        '{"text": "T the escape \\\\ud800 written out", "id": "d"}',
    ]
    rows = [r.replace('"T', '"' + TEXT) for r in rows]
    (tmp_path / "c.jsonl").write_text("\n".join(rows))
    arr = tmp_path / "arr.json"
    copies = ",".join(rows[:2]).replace('"a"', '"e"').replace('"b"', '"f"')
    arr.write_text("[" + copies.replace("emoji", "emoji again") + "]")
    s = import_docs(
        [str(tmp_path / "c.jsonl"), str(arr)],
        tmp_path / "out",
        id_field="id",
        license="MIT",
        offline=True,
    )
    assert s["documents"] == 3 and s["skipped_by_reason"] == {"malformed_row": 3}, s
    assert s["records"] == s["documents"] + s["skipped"]
    docs = _rows(tmp_path / "out")
    assert docs["b"]["text"].endswith("\U0001f600") and "\\ud800" in docs["d"]["text"]
    skipped = pq.read_table(tmp_path / "out" / "skipped.parquet").to_pylist()
    details = sorted(r["skip_detail"] for r in skipped)
    assert "item 0: field 'text' holds a lone UTF-16 surrogate \\ud83d" in details[0], details
    assert "line 1: field 'text' holds a lone UTF-16 surrogate \\ud83d" in details[1], details
    assert "line 3: field 'meta.title.1' holds a lone UTF-16 surrogate \\udc00" in details[2]


def test_a_truncated_stream_keeps_the_rows_before_it_and_records_the_damage(tmp_path):
    lines = "\n".join(json.dumps({"text": f"{TEXT} {i}"}) for i in range(200)).encode()
    whole = gzip.compress(lines)
    (tmp_path / "t.jsonl.gz").write_bytes(whole[: len(whole) * 2 // 3])
    (tmp_path / "fake.jsonl.zst").write_bytes(b"this is not zstd at all\n")
    s = import_docs(
        [str(tmp_path / "t.jsonl.gz"), str(tmp_path / "fake.jsonl.zst")],
        tmp_path / "out",
        license="MIT",
        offline=True,
    )
    assert 0 < s["documents"] < 200
    skipped = pq.read_table(tmp_path / "out" / "skipped.parquet").to_pylist()
    details = {r["source_file"].rsplit("/", 1)[1]: r["skip_detail"] for r in skipped}
    assert "unreadable" in details["t.jsonl.gz"] and "unreadable" in details["fake.jsonl.zst"]
    assert s["records"] == s["documents"] + s["skipped"]


def test_a_zstd_corpus_of_many_frames_and_a_gzip_of_many_members_read_every_row(tmp_path):
    """pzstd and concatenated .zst files hold one frame per chunk, and concatenated .gz files
    one member per part: every frame or member is read, not the first alone."""
    import zstandard

    rows = [json.dumps({"text": f"{TEXT} {i}", "id": f"r{i}"}) + "\n" for i in range(6)]
    zc = zstandard.ZstdCompressor()
    (tmp_path / "m.jsonl.zst").write_bytes(b"".join(zc.compress(r.encode()) for r in rows))
    (tmp_path / "m.jsonl.gz").write_bytes(b"".join(gzip.compress(r.encode()) for r in rows))
    for name in ("m.jsonl.zst", "m.jsonl.gz"):
        s = import_docs(
            [str(tmp_path / name)], tmp_path / name.replace(".", "-"), license="MIT", offline=True
        )
        assert s["documents"] == 6 and s["skipped"] == 0, (name, s)


def test_robots_rules_meet_the_canonical_url_of_an_imported_row(tmp_path):
    """An escape, dot segments or raw UTF-8 in a corpus URL cannot walk past a Disallow: the
    rules meet the URL the crawler would have asked about (its canonical form); the document
    keeps the URL as the corpus spells it."""
    from tests.imports.archives import TEST_CONFIG, RobotsBodies

    ip = "127.0.0.184"
    robots = "User-agent: RefineryBot-Extended\nDisallow: /private\nDisallow: /caf\u00e9\n"
    with RobotsBodies({ip: robots}) as server:
        b = f"http://{ip}:{server.port}"
        out = [f"{b}/private/a", f"{b}/%70rivate/b", f"{b}/public/../private/c", f"{b}/caf\u00e9"]
        out.append(f"{b}//private/e")  # a server that merges slashes serves /private/e
        urls = [*out, f"{b}/public/d"]
        rows = [{"text": f"{TEXT} {i}", "id": f"r{i}", "url": u} for i, u in enumerate(urls)]
        (tmp_path / "c.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
        import_docs(
            [str(tmp_path / "c.jsonl")], tmp_path / "out", id_field="id", config=TEST_CONFIG
        )
    docs = {d["url"]: d for d in _rows(tmp_path / "out").values()}
    assert set(docs) == set(urls)
    for u in out:
        assert (docs[u]["training_allowed"], docs[u]["robots_training"]) == (False, "disallowed")
        assert "Disallow: /" in docs[u]["consent_source"], docs[u]["consent_source"]
    assert docs[urls[-1]]["training_allowed"] is True


def test_a_corpus_rows_own_opt_out_is_kept_and_named(tmp_path):
    """A row's own training_allowed (only the boolean true) and noai are kept: the licence, or
    today's robots.txt for a row with a URL, can only add a no."""
    from tests.imports.archives import ALLOW, TEST_CONFIG, RobotsServer

    with RobotsServer() as server:
        page = f"http://{ALLOW}:{server.port}"
        rows = [
            {"id": "string", "training_allowed": "true"},
            {"id": "null", "training_allowed": None},
            {"id": "noimageai", "training_allowed": True, "noimageai": True},
            {"id": "true", "training_allowed": True, "noai": False},
            {"id": "url-false", "training_allowed": False, "url": f"{page}/a"},
            {"id": "url-noai", "training_allowed": True, "noai": True, "url": f"{page}/b"},
            {"id": "url-true", "training_allowed": True, "url": f"{page}/c"},
        ]
        lines = [json.dumps({**r, "text": f"{TEXT} {r['id']}"}) for r in rows]
        (tmp_path / "c.jsonl").write_text("\n".join(lines) + "\n")
        typed = {"id": ["false", "noai"], "training_allowed": [False, True], "noai": [False, True]}
        typed["text"] = [f"{TEXT} parquet {i}" for i in range(2)]
        pq.write_table(pa.table(typed), tmp_path / "c.parquet")
        import_docs(
            [str(tmp_path / "c.jsonl"), str(tmp_path / "c.parquet")],
            tmp_path / "out",
            id_field="id",
            license="cc-by-4.0",
            config=TEST_CONFIG,
        )
    docs = _rows(tmp_path / "out")
    allowed = {k for k, d in docs.items() if d["training_allowed"] is True}
    assert allowed == {"noimageai", "true", "url-true"}
    assert docs["false"]["consent_source"] == (
        "licence: cc-by-4.0; source row: training_allowed is false"
    )
    assert "source row: training_allowed is 'true' (str)" in docs["string"]["consent_source"]
    assert "source row: training_allowed is missing or null" in docs["null"]["consent_source"]
    assert docs["noai"]["noai"] is True and "source row: noai" in docs["noai"]["consent_source"]
    assert docs["noimageai"]["noimageai"] is True and docs["noimageai"]["noai"] is False
    for key in ("url-false", "url-noai"):  # robots.txt allows them; the row's own no stands
        source = docs[key]["consent_source"]
        assert source.startswith("source row: training_allowed"), source
        assert (
            "robots.txt at import: allowed" in source and docs[key]["robots_training"] == "allowed"
        )
    assert "source row: noai" in docs["url-noai"]["consent_source"]


def test_a_row_without_the_named_url_field_is_looked_for_in_the_usual_places(tmp_path):
    """--url-field names a field some rows lack (or leave empty): a row that names its page in
    `url` goes through the robots check, never consented by the licence alone; so does a row
    whose `url` is empty but whose `metadata.url` is not."""
    rows = [
        {"text": TEXT + " a", "id": "a", "meta": {"link": "http://127.0.0.9/a"}},
        {"text": TEXT + " b", "id": "b", "url": "http://127.0.0.9/b"},
        {"text": TEXT + " c", "id": "c", "meta": {"link": None}, "url": "http://127.0.0.9/c"},
        {"text": TEXT + " d", "id": "d"},
    ]
    (tmp_path / "c.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    import_docs(
        [str(tmp_path / "c.jsonl")],
        tmp_path / "out",
        id_field="id",
        url_field="meta.link",
        license="cc-by-4.0",
        offline=True,
    )
    docs = _rows(tmp_path / "out")
    assert {k: d["url"] for k, d in docs.items()} == {
        "a": "http://127.0.0.9/a",
        "b": "http://127.0.0.9/b",
        "c": "http://127.0.0.9/c",
        "d": None,
    }
    assert {k for k, d in docs.items() if d["training_allowed"]} == {"d"}  # licence: no URL only
    other = [{"text": TEXT, "id": "e", "url": "", "metadata": {"url": "http://127.0.0.9/e"}}]
    (tmp_path / "e.jsonl").write_text(json.dumps(other[0]) + "\n")
    import_docs(
        [str(tmp_path / "e.jsonl")], tmp_path / "out2", id_field="id", license="x", offline=True
    )
    (e,) = _rows(tmp_path / "out2").values()
    assert (e["url"], e["training_allowed"]) == ("http://127.0.0.9/e", False)
