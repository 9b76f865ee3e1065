"""The sample web's text-rich images (sampleweb/textimages.py): each sits in its page as sites
place them, consented or opted out as its page and host say, and the OCR step (the domain
functions `refinery images ocr` runs) selects exactly the consented ones as text-rich, with
transcriptions close to the text drawn."""

from __future__ import annotations

import hashlib
import random
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawlers.images.decode import decode_image
from crawlers.images.ocr import OcrEngine
from sampleweb.textimages import TEXT_IMAGES, text_image
from synth.text_rich import make_text_rich
from tests.images.ocr_render import char_error_rate

pytestmark = pytest.mark.timeout(120)
CAPS = dict(max_bytes=10 * 2**20, max_pixels=40_000_000, min_side=32, max_aspect=3.0)


def _host(web, src: str):
    """(host page, its image label) of the text image at `src`."""
    found = [
        (p, i)
        for p in web.content_pages()
        for i in p.labels["images"]
        if i["src"] == src and p.site == text_image(src).site
    ]
    assert len(found) == 1, (src, [p.path for p, _ in found])
    return found[0]


def test_a_few_text_images_in_their_pages_languages_with_alt_and_consent(web):
    assert 4 <= len(TEXT_IMAGES) <= 9  # the demo's OCR stays cheap
    assert {"en", "fr", "es", "de", "zh", "ja"} <= {s.lang for s in TEXT_IMAGES}
    drops = {}
    for spec in TEXT_IMAGES:
        image = web.pages[(spec.site, spec.src)]
        assert image.content_type == ("image/jpeg" if spec.src.endswith(".jpg") else "image/png")
        assert decode_image(image.body, **CAPS).drop_reason is None, spec.src
        page, ref = _host(web, spec.src)
        assert page.labels["lang"] == spec.lang and ref["kind"] == spec.style
        html = page.body.decode()
        assert f'<img src="{spec.src}" alt="' in html
        main = html[html.index("<main>") : html.index("</main>")]
        assert spec.src in main  # in the main content, where extraction takes image refs
        if spec.caption:
            assert "<figcaption>" in main
        drops[spec.src] = ref["expect_drop"]
    assert Counter(drops.values()) == {None: 7, "training_opt_out": 1, "noai": 1}
    assert drops["/img/text/honigmarkt-plakat.png"] == "training_opt_out"  # host robots.txt
    assert drops["/img/text/affiche-conference.png"] == "noai"  # the page's meta robots


def _pairs(web, root) -> dict[str, str]:
    """The text images and four of the web's scenes as kept pairs (as `images build` writes
    them); an opted-out image's flag is false. Returns pair id -> src."""
    scenes = [p for p in web.pages.values() if p.labels["images"][:1] and p.path.endswith(".png")]
    scenes = [p for p in scenes if p.labels["images"][0]["kind"] == "scene"]
    chosen = [(s.site, s.src) for s in TEXT_IMAGES]
    chosen += [(p.site, p.path) for p in random.Random(0).sample(scenes, 4)]
    rows, ids = [], {}
    for n, (site, src) in enumerate(chosen):
        page = web.pages[(site, src)]
        sha = hashlib.sha256(page.body).hexdigest()
        rel = f"images/{sha[:2]}/{sha}.{src.rsplit('.', 1)[1]}"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(page.body)
        allowed = (
            src not in {s.src for s in TEXT_IMAGES} or _host(web, src)[1]["expect_drop"] is None
        )
        ids[f"p{n}"] = src
        rows.append(
            {
                "id": f"p{n}",
                "doc_id": f"{site}{src}",
                "caption": page.labels["images"][0]["alt"],
                "image_sha256": sha,
                "stored_sha256": sha,
                "image_path": rel,
                "training_allowed": allowed,
                "drop_reason": None,
            }
        )
    pq.write_table(pa.Table.from_pylist(rows), root / "pairs.parquet")
    return ids


def test_the_ocr_step_selects_the_consented_text_images_and_reads_them(web, tmp_path):
    ids = _pairs(web, tmp_path / "pairs")
    s = make_text_rich([tmp_path / "pairs"], tmp_path / "out", engine=OcrEngine(), workers=1)
    assert s["pairs"] == 11 and s["opted_out_skipped"] == 2 and s["text_rich"] == 7
    rows = pq.read_table(tmp_path / "out" / "ocr.parquet").to_pylist()
    rich = {ids[r["pair_id"]] for r in rows if r["text_rich"]}
    consented = {s.src for s in TEXT_IMAGES if _host(web, s.src)[1]["expect_drop"] is None}
    assert rich == consented  # no scene, no opted-out image
    pairs = pq.read_table(tmp_path / "out" / "pairs.parquet").to_pylist()
    for p in pairs:
        spec = text_image(ids[p["pair_id"]])
        assert char_error_rate(spec.text, p["caption"]) <= 0.05, (spec.src, p["caption"])
        assert p["language"] == spec.lang, (spec.src, p["language"])
    # the Traditional poster read in its own characters (chi_sim gives Simplified ones: CER 0.34)
    assert "/img/text/liuxingyu-guance.png" in {ids[p["pair_id"]] for p in pairs}


def test_a_missing_font_refuses_in_one_line_with_the_fix(monkeypatch, tmp_path):
    from sampleweb import textimages

    monkeypatch.setattr(textimages, "FONT_PATHS", (str(tmp_path / "wqy-microhei.ttc"),))
    textimages.font_path.cache_clear()
    textimages._font.cache_clear()  # the loaded fonts too: render must look the file up
    try:
        with pytest.raises(FileNotFoundError) as err:
            textimages.render(TEXT_IMAGES[0])
    finally:
        textimages.font_path.cache_clear()
        textimages._font.cache_clear()
    message = str(err.value)
    assert "\n" not in message and "fonts-wqy-microhei" in message and "make bootstrap" in message
