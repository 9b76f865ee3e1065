"""Two small CMS hosts on loopback, built the way the real software writes its pages, for crawl
tests that read what was served from the server's own log.

`ShopHost`: a Shopify store on a Dawn-like theme. Collections list their products 8 to a page
under `/collections/<c>/products/<handle>` (the product under each collection it belongs to,
naming `/products/<handle>` canonical), with the theme's numbered pager that links `?page=1` (the
bare listing again) and the pages ahead. Every product page names itself canonical, links its
size variants (`?variant=N`) and four "You may also like" products with the recommendation
engine's tracking parameters (`?pr_prod_strat=..&pr_rec_id=<fresh hex>&pr_rec_pid=<n>&
pr_ref_pid=<n>&pr_seq=uniform`), all naming the bare product canonical. The last products of each
collection are listed only on its second page.

`DocsHost`: a Sphinx / Read the Docs project in two versions, `/en/stable/` and `/en/latest/`,
the same pages in both; every page links its neighbours, its section's pages and the same page in
the other version (the flyout menu), and names the stable page canonical.

Each logs (path with query, kind, document or None): `kind` is 'content' for a product or doc
page, 'listing', 'robots' or 'other'; the document is the product handle or the doc page's path
under the version.
"""

from __future__ import annotations

import html
import random
from collections import Counter
from urllib.parse import parse_qsl, urlsplit

from aiohttp import web

from .loopback import LoopbackServer
from .newsserver import WORDS


def _para(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


class _Logged(LoopbackServer):
    log: list[tuple[str, str, str | None]]
    documents: list[str]

    def url(self, path: str = "/") -> str:
        return f"http://{self.ip}:{self.port}{path}"

    def served(self) -> Counter[str]:
        """Content fetches per document."""
        return Counter(doc for _, kind, doc in self.log if kind == "content" and doc)

    def measure(self) -> dict:
        """Coverage of the documents, fetches of a document already fetched, requests."""
        served = self.served()
        return {
            "documents": len(self.documents),
            "coverage": round(len(set(served) & set(self.documents)) / len(self.documents), 4),
            "duplicate_fetches": sum(n - 1 for n in served.values()),
            "requests": len(self.log),
            "kinds": dict(Counter(kind for _, kind, _ in self.log)),
        }

    def _page(self, title: str, head: str, main: str) -> web.Response:
        doc = (
            f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>"
            f"{html.escape(title)}</title>{head}</head><body>{main}</body></html>"
        )
        return web.Response(text=doc, content_type="text/html")


class ShopHost(_Logged):
    """The Dawn-like store (see module doc): `n_collections` collections of `per_collection`
    products, 8 to a listing page."""

    label = "shop host"
    PER_PAGE = 8

    def __init__(self, ip: str = "127.0.0.81", *, n_collections: int = 5, per_collection: int = 11):
        super().__init__([ip])
        self.ip = ip
        self.log = []
        self.colls = [f"coll{chr(97 + i)}" for i in range(n_collections)]
        self.products: dict[str, dict] = {}
        for c in self.colls:
            for k in range(per_collection):
                rng = random.Random(f"{c}-{k}")
                handle = f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{c}-{k}".lower()
                self.products[handle] = {
                    "coll": c,
                    "n": len(self.products),
                    "title": f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()} {k}",
                    "body": [_para(rng, rng.randint(40, 70)) for _ in range(3)],
                }
        self.documents = list(self.products)
        self.by_n = {p["n"]: h for h, p in self.products.items()}

    def _frame(self, title: str, head: str, main: str) -> web.Response:
        menu = "".join(f'<li><a href="/collections/{c}">{c.title()}</a></li>' for c in self.colls)
        return self._page(
            f"{title} - Northwind",
            head,
            f'<header class="header"><nav class="header__inline-menu"><ul>{menu}'
            '<li><a href="/pages/contact">Contact</a></li></ul></nav></header>'
            f'<main id="MainContent" role="main">{main}</main>'
            '<footer class="footer"><a href="/policies/refund-policy">Refund policy</a></footer>',
        )

    def _card(self, handle: str, prefix: str = "", extra: str = "") -> str:
        p = self.products[handle]
        return (
            f'<li class="grid__item"><div class="card__content"><h3 class="card__heading">'
            f'<a href="{prefix}/products/{handle}{extra}" class="full-unstyled-link">'
            f'{html.escape(p["title"])}</a></h3><div class="price">'
            f"${19 + p['n']}.00 USD</div></div></li>"
        )

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = request.path_qs
        path = request.path
        q = dict(parse_qsl(urlsplit(raw).query, keep_blank_values=True))
        kind, doc = "other", None
        try:
            if path == "/robots.txt":
                kind = "robots"
                return web.Response(
                    text="User-agent: *\nDisallow: /cart\nDisallow: /policies/\n",
                    content_type="text/plain",
                )
            if path == "/":
                kind = "listing"
                cards = "".join(self._card(self.by_n[i]) for i in range(0, 40, 10))
                return self._frame(
                    "Home",
                    f'<link rel="canonical" href="{self.url("/")}">',
                    f'<h2>Featured</h2><ul class="grid">{cards}</ul>',
                )
            segs = [s for s in path.split("/") if s]
            if len(segs) == 2 and segs[0] == "collections" and segs[1] in self.colls:
                kind = "listing"
                return self._collection(segs[1], q)
            if (
                len(segs) == 2
                and segs[0] == "products"
                or len(segs) == 4
                and segs[0] == "collections"
                and segs[1] in self.colls
                and segs[2] == "products"
            ) and segs[-1] in self.products:
                kind, doc = "content", segs[-1]
                return self._product(segs[-1])
            if path == "/pages/contact":
                return self._frame("Contact", "", "<h1>Contact</h1><p>Write to us.</p>")
            kind = "dead"
            return web.Response(status=404, text="Not found", content_type="text/html")
        finally:
            self.log.append((raw, kind, doc))

    def _collection(self, coll: str, q: dict[str, str]) -> web.Response:
        prods = [h for h, p in self.products.items() if p["coll"] == coll]
        page = int(q["page"]) if q.get("page", "").isdigit() and int(q["page"]) > 0 else 1
        shown = prods[(page - 1) * self.PER_PAGE : page * self.PER_PAGE]
        if shown:
            grid = "".join(self._card(h, f"/collections/{coll}") for h in shown)
            grid = f'<ul id="product-grid" class="grid product-grid">{grid}</ul>'
        else:
            grid = '<div class="collection--empty"><h2>No products found</h2></div>'
        pager = "".join(
            f'<li><a href="/collections/{coll}?page={k}" class="pagination__item link">{k}</a></li>'
            for k in range(1, page + 3)
        )
        canonical = self.url(f"/collections/{coll}" + (f"?page={page}" if page > 1 else ""))
        return self._frame(
            coll.title(),
            f'<link rel="canonical" href="{canonical}">',
            f'<div class="collection-hero"><h1>{coll.title()}</h1></div>{grid}'
            f'<nav class="pagination-wrapper"><ul class="pagination__list">{pager}</ul></nav>',
        )

    def _product(self, handle: str) -> web.Response:
        p = self.products[handle]
        rng = random.Random()  # the recommendation id is fresh on every request
        recs = random.Random(handle).sample([h for h in self.products if h != handle], 4)
        rec_cards = "".join(
            self._card(
                h,
                extra=f"?pr_prod_strat=collection_fallback&pr_rec_id={rng.getrandbits(36):09x}"
                f"&pr_rec_pid={7000 + self.products[h]['n']}&pr_ref_pid={7000 + p['n']}"
                "&pr_seq=uniform",
            )
            for h in recs
        )
        sizes = " ".join(
            f'<a href="/products/{handle}?variant={39000 + 10 * p["n"] + k}">{s}</a>'
            for k, s in enumerate(("S", "M", "L"))
        )
        body = "".join(f"<p>{html.escape(x)}</p>" for x in p["body"])
        return self._frame(
            p["title"],
            f'<link rel="canonical" href="{self.url("/products/" + handle)}">',
            f'<section class="product"><div class="product__title"><h1>{html.escape(p["title"])}'
            f'</h1></div><fieldset class="product-form__input">{sizes}</fieldset>'
            f'<div class="product__description rte">{body}</div></section>'
            f'<div class="product-recommendations"><h2>You may also like</h2>'
            f'<ul class="grid product-grid">{rec_cards}</ul></div>',
        )


class DocsHost(_Logged):
    """The Sphinx / Read the Docs project (see module doc): `n_sections` sections of
    `per_section` pages, in versions stable and latest, all naming the stable page canonical."""

    label = "docs host"
    VERSIONS = ("stable", "latest")

    def __init__(self, ip: str = "127.0.0.82", *, n_sections: int = 4, per_section: int = 10):
        super().__init__([ip])
        self.ip = ip
        self.log = []
        self.sections = [f"sec{chr(97 + i)}" for i in range(n_sections)]
        self.pages: list[str] = []
        self.text: dict[str, list[str]] = {}
        for s in self.sections:
            for k in range(per_section):
                rng = random.Random(f"doc-{s}-{k}")
                name = f"{s}/{rng.choice(WORDS).lower()}-{k}.html"
                self.pages.append(name)
                self.text[name] = [_para(rng, rng.randint(40, 70)) for _ in range(3)]
        self.documents = list(self.pages)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw, path = request.path_qs, request.path
        kind, doc = "other", None
        try:
            if path == "/robots.txt":
                kind = "robots"
                return web.Response(text="User-agent: *\nDisallow:\n", content_type="text/plain")
            if path == "/":
                raise web.HTTPFound(self.url("/en/stable/"))
            segs = path.split("/", 3)
            if len(segs) < 4 or segs[1] != "en" or segs[2] not in self.VERSIONS:
                kind = "dead"
                return web.Response(status=404, text="Not found", content_type="text/html")
            ver, rest = segs[2], segs[3] or "index.html"
            if rest == "index.html":
                kind = "listing"
                toc = "".join(
                    f'<li class="toctree-l1"><a class="reference internal" href="{s}/index.html">'
                    f"{s}</a></li>"
                    for s in self.sections
                )
                return self._page("Welcome", "", f"<h1>Welcome</h1><ul>{toc}</ul>")
            if rest.endswith("/index.html") and rest.split("/")[0] in self.sections:
                kind = "listing"
                sec = rest.split("/")[0]
                toc = "".join(
                    f'<li class="toctree-l1"><a class="reference internal" href="/en/{ver}/{n}">'
                    f"{n}</a></li>"
                    for n in self.pages
                    if n.startswith(sec + "/")
                )
                return self._page(sec, "", f"<h1>{sec}</h1><ul>{toc}</ul>")
            if rest in self.text:
                kind, doc = "content", rest
                return self._doc(ver, rest)
            kind = "dead"
            return web.Response(status=404, text="Not found", content_type="text/html")
        finally:
            self.log.append((raw, kind, doc))

    def _doc(self, ver: str, name: str) -> web.Response:
        i = self.pages.index(name)
        sec = name.split("/")[0]
        nav = "".join(
            f'<li class="toctree-l2"><a class="reference internal" href="/en/{ver}/{n}">{n}</a></li>'
            for n in self.pages
            if n.startswith(sec + "/")
        )
        prev = f'<a href="/en/{ver}/{self.pages[i - 1]}" rel="prev">Previous</a>' if i else ""
        nxt = (
            f'<a href="/en/{ver}/{self.pages[i + 1]}" rel="next">Next</a>'
            if i + 1 < len(self.pages)
            else ""
        )
        flyout = "".join(f'<dd><a href="/en/{v}/{name}">{v}</a></dd>' for v in self.VERSIONS)
        body = "".join(f"<p>{html.escape(x)}</p>" for x in self.text[name])
        return self._page(
            name,
            f'<link rel="canonical" href="{self.url("/en/stable/" + name)}">',
            f'<nav class="wy-nav-side" role="navigation"><ul class="current">{nav}</ul></nav>'
            f'<div role="main" class="document"><section><h1>{name}</h1>{body}</section></div>'
            f'<footer><div class="rst-footer-buttons">{prev}{nxt}</div></footer>'
            f'<div class="rst-versions" role="note"><dl><dt>Versions</dt>{flyout}</dl></div>',
        )
