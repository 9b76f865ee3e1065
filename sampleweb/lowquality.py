"""Low-quality pages per language (spam, boilerplate, garbled, repeated) and the image galleries."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from . import extras
from .content import LANGS
from .imageset import figures, logo
from .markup import document, paragraphs
from .sites import LOWQ_SITE

if TYPE_CHECKING:
    from .builder import Builder

GALLERIES = 36
# Gallery index -> how its training opt-out is signalled.
GALLERY_NOAI = {1: "header", 4: "header", 6: "meta"}


def _low(b: Builder, lang: str, kind: str, n: int, title: str, lines: list[str]) -> None:
    site = LOWQ_SITE[lang]
    body = document(
        b.site(site),
        lang,
        title,
        f'<div class="content"><h1>{escape(title)}</h1>{paragraphs(lines)}</div>',
    )
    b.add(
        site,
        f"/misc/{kind}-{lang}-{n}.html",
        body,
        lang=lang,
        page_type=kind,
        topic="misc",
        quality="low",
        is_content=True,
        title=title,
        main_text="\n".join(lines),
    )


def add_low_quality_pages(b: Builder) -> None:
    """Ten labelled low-quality pages per language: four spam, two each of boilerplate, garbled, repeated."""
    for lang in LANGS:
        pool = b.pools[lang]
        for n in range(4):
            spam = extras.keyword_spam(b.rng, pool.spam_keywords)
            _low(b, lang, "spam", n, " ".join(b.rng.sample(pool.spam_keywords, 5)), spam)
        for n in range(2):
            # Each boilerplate page takes a disjoint half of the pool, so no two share a line.
            dump = list(pool.boilerplate[n::2])
            _low(b, lang, "boilerplate", n, dump[0][:40], dump)
            garbled = extras.garble(pool.garbled[n], b.rng)
            _low(
                b,
                lang,
                "garbled",
                n,
                garbled[:30],
                [garbled[i : i + 200] for i in range(0, len(garbled), 200)],
            )
            sentence = pool.repeated[n]
            _low(
                b, lang, "repeated", n, sentence[:40], [" ".join([sentence] * 6) for _ in range(4)]
            )


def add_galleries(b: Builder) -> None:
    """Galleries on gallery-en: scenes with matching and mismatching alt texts, some in a domain."""
    site = "gallery-en"
    domains = [None, None, "science", "medical", "food"]
    for g in range(GALLERIES):
        images = []
        for k in range(4 + g % 3):
            domain = domains[(g + k) % len(domains)]
            images.append(b.image(site, domain, matches=(g + k) % 3 != 0))
        intro = (
            f"Gallery {g + 1} of the shape studies collection holds {len(images)} drawings, "
            f"catalogued under reference SS-{b.seed}-{g + 1:02d}."
        )
        images.append(logo(b))
        mode = GALLERY_NOAI.get(g)
        title = f"Shape studies, gallery {g + 1}"
        body = document(
            b.site(site),
            "en",
            title,
            f"<h1>{title}</h1><p>{escape(intro)}</p>{figures(images)}",
            robots=["noai"] if mode == "meta" else [],
        )
        b.add(
            site,
            f"/galleries/{g + 1}.html",
            body,
            headers={"X-Robots-Tag": "noai"} if mode == "header" else {},
            lang="en",
            page_type="gallery",
            topic="images",
            quality="medium",
            is_content=True,
            title=title,
            main_text=intro,
            images=images,
            noai=mode is not None,
        )
