"""Assemble the sample web: every site's pages, labels, images, robots.txt and sitemaps."""

from __future__ import annotations

import gzip as _gzip
import random
import re

from . import extras
from .builder import Builder
from .content import LANGS, Doc, load_all
from .imageset import add_collections
from .jspages import MECHANISMS, build_js_page
from .lowquality import add_galleries, add_low_quality_pages
from .markup import article, document, forum_thread, table_html
from .model import Page, SampleWeb
from .robots import robots_for
from .sites import (
    JS_ELSEWHERE,
    LANG_SITES,
    ROBOTS_FLAGS,
    SECTIONS,
    SITE_SPECS,
    SPECIAL_SECTIONS,
    make_sites,
)
from .structure import add_site_structure
from .syndicate import add_duplicates
from .textimages import add_text_images

TEAMS = ["Aurora", "Borealis", "Cascade", "Delta", "Ember", "Falcon", "Granite", "Harbor"]
IMAGE_TOPICS = {"science": "science", "health": "medical", "cooking": "food", "food": "food"}


def slugify(doc: Doc) -> str:
    """Stable URL slug: the document id plus an ASCII rendering of its title."""
    ascii_title = re.sub(r"[^a-z0-9]+", "-", doc.title.lower()).strip("-")[:40].strip("-")
    return f"{doc.id}-{ascii_title}" if ascii_title else doc.id


def _figure(img: dict) -> str:
    return f'<figure><img src="{img["src"]}" alt="{img["alt"]}" width="{img["width"]}" height="{img["height"]}"></figure>'


def doc_page(
    b: Builder, doc: Doc, site: str, path: str, *, flags=None, related=(), ordinal: int = 0
) -> Page:
    """Render a hand-written document as an article, forum thread, product or recipe page."""
    rng = b.rng
    meta, xrt = flags or ([], None)
    texts: list[str] = []
    pii: list[dict] = []
    decoys: list[dict] = []
    tables: list[dict] = []
    images: list[dict] = []
    extra_html = ""
    if doc.kind in ("forum", "product") and (doc.kind == "product" or rng.random() < 0.6):
        pii_line, pii = extras.fill(
            rng.choice(b.pools[doc.lang].pii_lines), extras.pii_values(rng, doc.lang)
        )
        decoy_line, decoy_used = extras.fill(
            rng.choice(b.pools[doc.lang].decoy_lines), extras.decoy_values(rng)
        )
        decoys = decoy_used
        added = [pii_line, decoy_line]
    else:
        added = []
    if doc.kind == "forum":
        users = [
            f"{rng.choice(extras.NAMES).split('.')[0]}_{rng.randint(10, 999)}"
            for _ in range(len(doc.paras) + 2)
        ]
        posts = list(zip(users, list(doc.paras) + added, strict=False))
        texts = [t for _, t in posts]
        main = forum_thread(doc.title, posts)
        # A signature link with rel=nofollow, as forums mark user-generated links.
        main += '<p class="sig"><a href="{{site:shop-en}}/" rel="nofollow ugc">shop-en</a></p>'
    else:
        if doc.kind == "product":
            header, rows, total = extras.spec_table(rng, doc.lang, doc.title.split()[0][:12])
            extra_html += table_html(header, rows, total=total)
            tables.append({"header": header, "rows": len(rows) + 1, "cols": len(header)})
        if doc.topic == "sports":
            teams = rng.sample(TEAMS, 4)
            header, rows = extras.results_table(rng, doc.lang, teams)
            extra_html += table_html(header, rows, rowspan_first=2)
            tables.append({"header": header, "rows": len(rows), "cols": len(header)})
        if doc.lang == "en" and (doc.topic in IMAGE_TOPICS or ordinal % 3 == 0):
            img = b.image(site, IMAGE_TOPICS.get(doc.topic), matches=ordinal % 4 != 1)
            images.append(img)
            extra_html = _figure(img) + extra_html
        paras = list(doc.paras) + added
        main = article(doc.title, paras, items=list(doc.items), extra=extra_html)
        texts = paras[:1] + list(doc.items) + paras[1:]
    headers = {"X-Robots-Tag": xrt} if xrt else {}
    directives = set(meta) | {d.strip() for d in (xrt or "").split(",") if d.strip()}
    body = document(b.site(site), doc.lang, doc.title, main, related=list(related), robots=meta)
    page_type = doc.kind
    return b.add(
        site,
        path,
        body,
        headers=headers,
        lang=doc.lang,
        page_type=page_type,
        topic=doc.topic,
        quality="high" if doc.kind == "reference" else "medium",
        is_reference=doc.kind == "reference",
        is_content=True,
        title=doc.title,
        main_text="\n".join(texts),
        noindex="noindex" in directives,
        nofollow="nofollow" in directives,
        noai="noai" in directives,
        noimageai="noimageai" in directives,
        images=images,
        tables=tables,
        pii=pii,
        pii_decoys=decoys,
    )


def js_page(b: Builder, doc: Doc, site: str, mechanism: str) -> Page:
    """A page whose main content needs JavaScript; its resources are registered as pages too."""
    slug = slugify(doc)
    jp = build_js_page(
        mechanism,
        slug,
        doc.title,
        list(doc.paras),
        ui_more=b.pools[doc.lang].ui.get("more", "Load more"),
    )
    for path, (body, ctype) in jp.resources.items():
        b.add(
            site,
            path,
            body,
            content_type=ctype,
            page_type="api" if path.startswith("/api/") else "script",
            lang=doc.lang,
        )
    body = document(b.site(site), doc.lang, doc.title, jp.main, body_extra=jp.body_extra)
    return b.add(
        site,
        f"/js/{slug}.html",
        body,
        lang=doc.lang,
        page_type="js",
        topic=doc.topic,
        quality="medium",
        is_content=True,
        title=doc.title,
        main_text="\n".join(doc.paras),
        js_only_text=jp.js_only,
        js_mechanism=mechanism,
        resources=sorted(jp.resources),
    )


def place_docs(b: Builder) -> dict[str, list[tuple[Doc, str, str]]]:
    """Decide every document's site and path; returns the regular placements per language."""
    placements: dict[str, list[tuple[Doc, str, str]]] = {}
    js_todo = dict(JS_ELSEWHERE)
    for lang in LANGS:
        docs = list(b.pools[lang].docs)
        normals = [d for d in docs if d.kind != "reference"]
        js_docs: list[tuple[Doc, str, str]] = []
        if lang == "en":
            articles = [d for d in normals if d.kind == "article"]
            for doc, mech in zip(articles[: len(MECHANISMS)], MECHANISMS, strict=False):
                js_docs.append((doc, "apps-en", mech))
        elif lang in js_todo:
            doc = next(d for d in normals if d.kind == "article")
            js_docs.append((doc, LANG_SITES[lang]["article"], js_todo[lang]))
        taken = {d.id for d, _, _ in js_docs}
        for doc, site, mech in js_docs:
            js_page(b, doc, site, mech)
        portal = [d for d in normals if d.id not in taken][-1:]
        taken |= {d.id for d in portal}
        for doc in portal:
            doc_page(b, doc, "portal-multi", f"/{lang}/{slugify(doc)}.html")
        placements[lang] = [
            (d, LANG_SITES[lang][d.kind], SECTIONS[d.kind]) for d in docs if d.id not in taken
        ]
    return placements


def build_web(seed: int = 0) -> SampleWeb:
    """Build the whole sample web in memory: pure, deterministic for a seed, no network."""
    sites = make_sites()
    b = Builder(seed, sites, load_all(), random.Random(seed))
    for name, _, _, variant, sitemap in SITE_SPECS:
        b.robots[name] = robots_for(name, variant, sitemap)
    placements = place_docs(b)
    per_site: dict[str, list[tuple[Doc, str]]] = {}
    for lang in LANGS:
        for doc, site, section in placements[lang]:
            per_site.setdefault(site, []).append((doc, section))
    regular: list[Page] = []
    for site, items in per_site.items():
        specials = SPECIAL_SECTIONS.get(site, ())
        # The last few pages of a site move into its robots-relevant sections.
        cut = len(items) - len(specials)
        for i, (doc, section) in enumerate(items):
            slug = slugify(doc)
            path = f"{section}{slug}.html"
            if i >= cut:
                special = specials[i - cut]
                if special == "?sessionid":
                    path = f"{section}{slug}.html?sessionid=8f3a2c"
                elif special == ".pdf.html":
                    path = f"/files/{slug}.pdf.html"
                else:
                    path = f"{special}{slug}.html"
            related = [(f"{s2}{slugify(d2)}.html", d2.title) for d2, s2 in items[i + 1 : i + 3]]
            page = doc_page(
                b, doc, site, path, flags=ROBOTS_FLAGS.get((site, i)), related=related, ordinal=i
            )
            if i < cut and not ROBOTS_FLAGS.get((site, i)):
                regular.append(page)
    add_duplicates(b, regular)
    add_text_images(b)
    add_low_quality_pages(b)
    add_galleries(b)
    add_collections(b)
    add_site_structure(b)
    ordered = dict(sorted(b.pages.items(), key=lambda kv: (b.site(kv[0][0]).index, kv[0][1])))
    return SampleWeb(seed, sites, ordered)


def gzip_body(body: bytes) -> bytes:
    """Deterministic gzip (mtime 0) for Content-Encoding: gzip responses."""
    return _gzip.compress(body, compresslevel=6, mtime=0)
