"""Every reader of pairs takes drop_reason as `common.pairs.settle` does: the captioner, OCR and
the interleaved documents read a duplicate in place of a kept copy the consent ledger opted out,
and one image kept in two shards once (before, they read the file's drop_reason themselves: the
allowed copy was lost to each of them)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from common.consent import Consent
from common.pairs import DUPLICATE
from common.schemas import INTERLEAVED

from .pairsets import opt_out, pair, stored_image, write_pairs

pytestmark = pytest.mark.timeout(60)


def _lake_with_a_duplicate(tmp_path: Path) -> tuple[Path, Path]:
    lake = tmp_path / "lake"
    out = lake / "images" / "pairs"
    img = stored_image(out, (200, 100, 0))
    write_pairs(
        out,
        [
            pair("d0-0", "http://h/a/x.png", img, position=1),
            pair(
                "d1-0",
                "http://h/b/x.png",
                img,
                position=1,
                drop_reason=DUPLICATE,
                duplicate_of="d0-0",
            ),
        ],
    )
    opt_out(lake, "http://h/a/x.png", ["d0-0"])
    return lake, out


def test_captions_read_the_allowed_duplicate_of_an_opted_out_kept_copy(tmp_path):
    from synth.captions import read_pairs

    lake, out = _lake_with_a_duplicate(tmp_path)
    kept, opted_out = read_pairs(out, Consent.load(lake))
    assert [k["pair_id"] for k in kept] == ["d1-0"]
    assert opted_out == 1


def test_ocr_reads_the_allowed_duplicate_of_an_opted_out_kept_copy(tmp_path):
    from synth.text_rich import read_pairs

    lake, out = _lake_with_a_duplicate(tmp_path)
    kept, opted_out = read_pairs(out, Consent.load(lake))
    assert [k["pair_id"] for k in kept] == ["d1-0"]
    assert opted_out == 1
    assert read_pairs(out, None)[0][0]["pair_id"] == "d0-0"  # the flags alone: as the file says


def test_ocr_names_a_pairs_file_without_its_columns(tmp_path):
    import pyarrow.parquet as pq

    from common.inputs import InputError
    from synth.text_rich import read_pairs

    out = tmp_path / "pairs"
    out.mkdir()
    pq.write_table(pa.table({"id": ["a"], "caption": ["c"]}), out / "pairs.parquet")
    with pytest.raises(InputError, match=r"pairs\.parquet.*image_path"):
        read_pairs(out)


def test_one_image_kept_in_two_shards_is_captioned_once(tmp_path):
    from synth.captions import read_pairs

    base = tmp_path / "lake" / "images" / "pairs"
    s0, s1 = base / "shard=0", base / "shard=1"
    img0, img1 = stored_image(s0, (10, 120, 200)), stored_image(s1, (10, 120, 200))
    write_pairs(s0, [pair("d1-0", "http://a/x.png", img0, clip_score=0.3)], "0/2")
    write_pairs(s1, [pair("d0-0", "http://b/x.png", img1, clip_score=0.3)], "1/2")
    kept, _ = read_pairs(base)
    assert [k["pair_id"] for k in kept] == ["d0-0"]


def test_interleaved_documents_keep_the_allowed_duplicate_of_an_opted_out_kept_copy(tmp_path):
    from common.manifest import write_parquet
    from filters.images.config import InterleavedConfig
    from filters.images.interleaved import write_interleaved

    lake, out = _lake_with_a_duplicate(tmp_path)
    docs = tmp_path / "extract"
    text = {"kind": "text", "text": "words " * 40, "src": None, "alt": None}
    rows = [
        {
            "doc_id": d,
            "url": f"http://h/{d}",
            "blocks": [text, {"kind": "image", "text": None, "src": src, "alt": "x"}],
            "training_allowed": True,
        }
        for d, src in (("d0", "http://h/a/x.png"), ("d1", "http://h/b/x.png"))
    ]
    write_parquet(pa.Table.from_pylist(rows, schema=INTERLEAVED), docs / "interleaved.parquet")

    class Cfg:
        interleaved = InterleavedConfig(min_images=1, min_text_chars=0)

    import pyarrow.parquet as pq

    files = [out / "pairs.parquet"]
    write_interleaved(docs, files, tmp_path / "flags", Cfg())  # the flags alone
    kept = pq.read_table(tmp_path / "flags" / "interleaved.parquet").column("doc_id").to_pylist()
    assert kept == ["d0"]  # d1's image is a duplicate of d0's
    write_interleaved(docs, files, tmp_path / "ledger", Cfg(), Consent.load(lake))
    kept = pq.read_table(tmp_path / "ledger" / "interleaved.parquet").to_pylist()
    by_doc = {d["doc_id"]: d for d in kept}
    assert by_doc["d1"]["blocks"][1]["pair_id"] == "d1-0"  # took the opted-out copy's place
