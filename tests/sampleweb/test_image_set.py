"""The sample web's image-text test set: each special image decodes (or is refused) as its
label's `expect_drop` says, robots.txt and X-Robots-Tag agree with the labels, and a page's
opt-out overrides its images' own expectation."""

from __future__ import annotations

from collections import Counter

from crawlers.images.consent import xrt_opt_out
from crawlers.images.decode import decode_image
from sampleweb.robots import CRAWL_TOKEN, TRAINING_TOKEN, is_allowed

DECODE_REASONS = ("decompression_bomb", "undecodable", "too_small", "bad_aspect")
DEFAULT_CAPS = dict(max_bytes=10 * 2**20, max_pixels=40_000_000, min_side=32, max_aspect=3.0)


def _image_pages(web):
    return [p for p in web.pages.values() if p.labels["page_type"] == "image"]


def test_a_few_hundred_images_of_every_kind(web):
    images = _image_pages(web)
    assert 250 <= len(images) <= 400
    kinds = Counter(p.labels["images"][0]["kind"] for p in images)
    assert kinds["scene"] >= 240 and kinds["logo"] == 1
    assert kinds["reencoded"] >= 3 and kinds["resized"] >= 3
    assert {"bomb", "truncated", "spacer", "banner"} <= set(kinds)
    assert sum(len(p.body) for p in images) < 4 * 2**20  # the demo stays quick


def test_each_image_decodes_as_its_label_expects(web):
    for page in _image_pages(web):
        label = page.labels["images"][0]
        dec = decode_image(page.body, **DEFAULT_CAPS)
        want = label["expect_drop"] if label["expect_drop"] in DECODE_REASONS else None
        assert dec.drop_reason == want, (page.path, dec)
        if label["copy_of"]:
            original = web.pages[(page.site, label["copy_of"])]
            assert original.body != page.body
            assert original.labels["images"][0]["scene"] == label["scene"]


def test_image_robots_and_x_robots_tag_agree_with_the_labels(web):
    robots = {}
    seen = Counter()
    for page in _image_pages(web):
        label = page.labels["images"][0]
        variant = robots.setdefault(page.site, _variant(web, page.site))
        crawl = is_allowed(variant, CRAWL_TOKEN, page.path)
        train = is_allowed(variant, TRAINING_TOKEN, page.path)
        xrt = page.headers.get("X-Robots-Tag")
        header = xrt_opt_out([xrt], CRAWL_TOKEN, TRAINING_TOKEN) if xrt else None
        if not crawl:
            want = "robots_denied"
        elif not train:
            want = "training_opt_out"
        elif header:
            want = "noai"
        else:
            want = label["expect_drop"] if label["expect_drop"] in DECODE_REASONS else None
        assert label["expect_drop"] == want, page.path
        seen[want] += 1
    assert seen["robots_denied"] >= 2 and seen["training_opt_out"] >= 2 and seen["noai"] >= 4
    assert any("OtherBot" in (p.headers.get("X-Robots-Tag") or "") for p in _image_pages(web))


def _variant(web, site):
    from sampleweb.robots import RobotsVariant

    page = web.pages[(site, "/robots.txt")]
    return RobotsVariant(page.status, page.body.decode())


def test_page_opt_out_overrides_its_images(web):
    pages = [p for p in web.content_pages() if p.labels["images"]]
    noimageai = [p for p in pages if p.labels["noimageai"] and not p.labels["noai"]]
    assert noimageai and all(p.labels["expect_training_allowed"] for p in noimageai)
    assert b'content="noimageai"' in noimageai[0].body
    for page in pages:
        for img in page.labels["images"]:
            own = web.pages[(page.site, img["src"])].labels["images"][0]["expect_drop"]
            if page.labels["noai"] or page.labels["noimageai"]:
                assert img["expect_drop"] == "noai"
            elif not page.labels["expect_training_allowed"]:
                assert img["expect_drop"] == "training_opt_out"
            else:
                assert img["expect_drop"] == own
    logo_pages = [p for p in pages if any(i["kind"] == "logo" for i in p.labels["images"])]
    assert len(logo_pages) >= 40  # repeated across many documents (OBELICS: > 10)
