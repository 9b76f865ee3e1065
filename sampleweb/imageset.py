"""The image-text test set on gallery-en: photo collections whose images exercise every drop
reason of the image fetch, and the site logo that every gallery and collection repeats.

Each collection holds fresh scenes (good alt texts, a few wrong ones) and one re-encoded (JPEG)
or resized copy of a gallery scene; some hold the special cases:

- /img/licensed/: robots.txt closes it to the training token (`training_opt_out`);
- /private/img/: robots.txt closes it to every crawler (`robots_denied`);
- images served with `X-Robots-Tag: noimageai` or `RefineryBot-Extended: noai` (`noai`), and one
  with `OtherBot: noimageai`, which is not ours and so does not apply;
- a decompression bomb (`decompression_bomb`), a truncated PNG (`undecodable`), a 1x400 spacer
  (`too_small`) and a 400x100 banner (`bad_aspect`);
- a collection page with `<meta name="robots" content="noimageai">` but not noai: its images
  are `noai`, its text stays usable.

Every image label carries `kind`, `copy_of` and `expect_drop` (see `Builder.asset`).
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from .images import (
    bomb_png,
    logo_png,
    random_scene,
    reencode_jpeg,
    render_png,
    resize_png,
    solid_png,
    truncated_png,
)
from .markup import document

if TYPE_CHECKING:
    from .builder import Builder

SITE = "gallery-en"
LOGO_SRC = "/img/logo.png"
LOGO_ALT = "logo"
COLLECTIONS = 10
SCENES_PER_COLLECTION = 5
LICENSED = "/img/licensed/"  # training token disallowed (robots.py's "gallery" variant)
PRIVATE = "/private/img/"  # every crawler disallowed
NOIMAGEAI_PAGE = 6  # the collection whose page says meta robots noimageai


def logo(b: Builder) -> dict:
    """The site logo's label (registered once); every gallery and collection page shows it."""
    return b.asset(SITE, LOGO_SRC, logo_png(), alt=LOGO_ALT, kind="logo", width=120, height=40)


def figures(images: list[dict]) -> str:
    """<figure><img></figure> markup of image labels, in order."""
    return "".join(
        f'<figure><img src="{i["src"]}" alt="{escape(i["alt"])}" width="{i["width"]}" '
        f'height="{i["height"]}"></figure>'
        for i in images
    )


def _specials(b: Builder, n: int) -> list[dict]:
    """The special images of collection `n` (1-based)."""
    if n == 1:
        return [b.image(SITE, prefix=LICENSED) for _ in range(2)]
    if n == 2:
        return [b.image(SITE, prefix=PRIVATE) for _ in range(2)]
    if n == 3:
        xrt = ["noimageai", "noimageai", "RefineryBot-Extended: noai"]
        return [b.image(SITE, headers={"X-Robots-Tag": v}) for v in xrt]
    if n == 4:
        scene = random_scene(b.rng)
        return [
            b.asset(
                SITE,
                "/img/poster-large.png",
                bomb_png(),
                alt="gallery poster",
                kind="bomb",
                width=20000,
                height=20000,
                fetch_drop="decompression_bomb",
            ),
            b.asset(
                SITE,
                "/img/truncated-scene.png",
                truncated_png(render_png(scene)),
                alt=scene.alt(),
                alt_matches=True,
                scene=scene.spec(),
                kind="truncated",
                width=scene.width,
                height=scene.height,
                fetch_drop="undecodable",
            ),
        ]
    if n == 5:
        return [
            b.asset(
                SITE,
                "/img/hairline.png",
                solid_png(1, 400, (255, 255, 255)),
                alt="spacer",
                kind="spacer",
                width=1,
                height=400,
                fetch_drop="too_small",
            ),
            b.asset(
                SITE,
                "/img/banner-strip.png",
                solid_png(400, 100, (200, 60, 60)),
                alt="banner",
                kind="banner",
                width=400,
                height=100,
                fetch_drop="bad_aspect",
            ),
        ]
    if n == 7:
        xrt = ["noimageai", "OtherBot: noimageai"]
        return [b.image(SITE, headers={"X-Robots-Tag": v}) for v in xrt]
    return []


def _copy(b: Builder, n: int) -> dict:
    """A re-encoded (odd n) or resized (even n) copy of the first scene of gallery 8 + n."""
    page = b.pages[(SITE, f"/galleries/{8 + n}.html")]
    original = page.labels["images"][0]
    png = b.pages[(SITE, original["src"])].body
    stem = original["src"].rsplit("/", 1)[1].rsplit(".", 1)[0]
    common = dict(
        alt=original["alt"],
        alt_matches=original["alt_matches"],
        scene=original["scene"],
        domain=original["domain"],
        copy_of=original["src"],
    )
    if n % 2:
        return b.asset(
            SITE,
            f"/img/copies/{stem}.jpg",
            reencode_jpeg(png, quality=80),
            kind="reencoded",
            width=original["width"],
            height=original["height"],
            content_type="image/jpeg",
            **common,
        )
    body, width, height = resize_png(png, 0.8)
    return b.asset(
        SITE,
        f"/img/copies/{stem}-small.png",
        body,
        kind="resized",
        width=width,
        height=height,
        **common,
    )


def add_collections(b: Builder) -> None:
    """The photo collections of gallery-en (call after the galleries: copies refer to them)."""
    for n in range(1, COLLECTIONS + 1):
        images = [b.image(SITE, matches=(n + k) % 5 != 0) for k in range(SCENES_PER_COLLECTION)]
        images[2:2] = _specials(b, n)
        images.append(_copy(b, n))
        images.append(logo(b))
        title = f"Photo collection {n}"
        intro = (
            f"Collection {n} gathers {len(images)} pictures from the shape studies archive, "
            f"filed under reference PC-{b.seed}-{n:02d}."
        )
        robots = ["noimageai"] if n == NOIMAGEAI_PAGE else []
        body = document(
            b.site(SITE),
            "en",
            title,
            f"<h1>{escape(title)}</h1><p>{escape(intro)}</p>{figures(images)}",
            robots=robots,
        )
        b.add(
            SITE,
            f"/collections/{n}.html",
            body,
            lang="en",
            page_type="gallery",
            topic="images",
            quality="medium",
            is_content=True,
            title=title,
            main_text=intro,
            images=images,
            noimageai=n == NOIMAGEAI_PAGE,
        )
