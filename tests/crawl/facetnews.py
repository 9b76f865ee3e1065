"""A fourth news host, on Drupal-like software with faceted search, on loopback.

Articles live at path aliases `/news/YYYY/slug` and answer at their system path `/node/N` too (200,
`<link rel=canonical>` to the alias), as a CMS without redirects does; related-article blocks link
the system paths. The newsroom's listing is `/news?page=K` (newest first, 20 a page, numbered
pager); every listing page and every search page carries a faceted search sidebar: topic, year and
type facets that each add or remove one value to the current selection (`/search?f=topic:x,year:
2021&sort=date`), the classic combinatorial space that lists the same articles again and again
(`/search` pages are never the only way to an article). Articles carry a "print" path
(`/node/N/print`) and a dead "edit" link (`/node/N/edit`, 403) and a comment form link
(`/comment/reply/N`, 404 to visitors).

`measure()` counts what each request served (see wpnews.WordPressNewsServer.measure): facet
combinations (two values or more), print and `/node/N` copies are variants (a `/node/N` answer
still counts its article as covered); a search page of one facet value is a listing.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from urllib.parse import parse_qsl, quote, urlsplit

from aiohttp import web

from .loggedhost import LoggedNewsHost
from .newsserver import WORDS

TOPICS = ("politics", "economy", "climate", "health", "education", "transport", "culture", "sport")
TYPES = ("news", "analysis", "interview")
PER_PAGE = 20
TRAP_KINDS = ("variant",)


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


class FacetNewsServer(LoggedNewsHost):
    """Serve the host on `ip`; `article_paths` lists the articles' aliases."""

    label = "faceted news server"

    def __init__(self, ip: str = "127.0.0.74", *, n_articles: int = 300, seed: int = 0):
        self.ip, self.seed, self.port = ip, seed, 0
        rng = random.Random(seed * 31 + 5)
        self.posts: list[dict] = []
        self.by_alias: dict[str, dict] = {}
        self.by_node: dict[int, dict] = {}
        day0 = dt.date(2020, 1, 1)
        for i in range(n_articles):
            title = _words(rng, rng.randint(5, 9)).capitalize()
            d = day0 + dt.timedelta(days=i * 1000 // max(1, n_articles))
            slug = "-".join(title.lower().split()[:6]) + f"-{i}"
            post = {
                "node": 100 + i * 7 + rng.randint(0, 6),
                "title": title,
                "alias": f"/news/{d.year}/{slug}",
                "date": d,
                "topic": rng.choice(TOPICS),
                "type": rng.choice(TYPES),
                "body": [
                    _words(rng, rng.randint(30, 60)).capitalize() + "."
                    for _ in range(rng.randint(3, 7))
                ],
            }
            self.posts.append(post)
            self.by_alias[post["alias"]] = post
            self.by_node[post["node"]] = post
        self.article_paths = [p["alias"] for p in self.posts]
        self.newest = self.posts[::-1]
        self.years = sorted({p["date"].year for p in self.posts})
        self.related = {p["node"]: rng.sample(self.posts, min(3, n_articles)) for p in self.posts}
        self.log: list[tuple[str, str, str | None]] = []
        super().__init__([self.ip])

    def measure(self) -> dict:
        """Coverage (articles served under any URL) and what the requests went to."""
        out, got = self.measure_log(not_content=("robots",), trap_kinds=TRAP_KINDS)
        return {**out, "by_kind": {"article": len(got)}}

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = request.raw_path
        parts = urlsplit(raw)
        q = dict(parse_qsl(parts.query, keep_blank_values=True))
        resp, kind, post = self._route(parts.path, q)
        self.log.append((raw, kind, post))
        if isinstance(resp, str):
            resp = web.Response(text=resp, content_type="text/html")
        return resp

    def _route(self, path: str, q: dict[str, str]):  # noqa: PLR0911
        if path == "/robots.txt":
            return web.Response(text="User-agent: *\nDisallow: /admin/\n"), "robots", None
        if path == "/":
            return self._listing("/news", 1, "Front page"), "listing", None
        if path == "/news":
            k = q.get("page", "1")
            if not k.isdigit() or not 1 <= int(k) <= self._pages(self.newest):
                return self._dead(), "dead", None
            return self._listing("/news", int(k), "News"), "listing", None
        if path == "/search":  # one facet value is a listing of its own; a combination is not
            combined = len([v for v in (q.get("f") or "").split(",") if v]) >= 2
            return self._search(q), "variant" if combined else "listing", None
        if path in self.by_alias:
            return self._article(self.by_alias[path]), "article", path
        m = re.fullmatch(r"/node/(\d+)(/\w+)?", path)
        if m and int(m.group(1)) in self.by_node:
            post = self.by_node[int(m.group(1))]
            if m.group(2) is None or m.group(2) == "/print":
                return self._article(post, printable=bool(m.group(2))), "variant", post["alias"]
            if m.group(2) == "/edit":
                return web.Response(status=403, text="Access denied"), "dead", None
        return self._dead(), "dead", None

    def _dead(self) -> web.Response:
        html = self._page(
            "Page not found",
            "<h1>Page not found</h1><p>The requested page could not be found.</p>",
            {},
        )
        return web.Response(status=404, text=html, content_type="text/html")

    def _pages(self, posts: list[dict]) -> int:
        return max(1, -(-len(posts) // PER_PAGE))

    def _facets(self, selected: dict[str, set[str]]) -> str:
        """The sidebar: one link per facet value, adding it to (or removing it from) the
        current selection, with the current sort."""

        def link(key: str, value: str) -> str:
            sel = {k: set(v) for k, v in selected.items()}
            sel.setdefault(key, set()).symmetric_difference_update({value})
            f = ",".join(f"{k}:{v}" for k in sorted(sel) for v in sorted(sel[k]))
            on = value in selected.get(key, set())
            href = f"/search?f={quote(f, safe=':,')}&amp;sort=date" if f else "/search?sort=date"
            return f'<li><a href="{href}">{"&#10003; " if on else ""}{value}</a></li>'

        groups = (("topic", TOPICS), ("year", [str(y) for y in self.years]), ("type", TYPES))
        blocks = "".join(
            f'<div class="facet"><h3>{key.capitalize()}</h3><ul>'
            + "".join(link(key, v) for v in values)
            + "</ul></div>"
            for key, values in groups
        )
        return f'<aside class="facets"><h2>Filter</h2>{blocks}</aside>'

    def _page(self, title: str, main: str, selected: dict[str, set[str]]) -> str:
        nav = "".join(
            f'<li><a href="/search?f=topic:{t}&amp;sort=date">{t}</a></li>' for t in TOPICS[:5]
        )
        return (
            f"<!DOCTYPE html><html lang=en><head><title>{title} | Northern Ledger</title></head>"
            f'<body><header><a href="/">Northern Ledger</a><nav><ul><li><a href="/news">News</a>'
            f"</li>{nav}</ul></nav></header><main>{main}</main>{self._facets(selected)}"
            "<footer><p>Northern Ledger, regional news since 1911.</p></footer></body></html>"
        )

    def _teasers(self, posts: list[dict]) -> str:
        return "".join(
            f'<article class="teaser"><h2><a href="{p["alias"]}">{p["title"]}</a></h2>'
            f"<p>{p['body'][0][:140]}</p></article>"
            for p in posts
        )

    def _listing(self, base: str, k: int, title: str) -> str:
        pages = self._pages(self.newest)
        chunk = self.newest[(k - 1) * PER_PAGE : k * PER_PAGE]
        pager = " ".join(
            f'<a href="{base}?page={j}">{j}</a>'
            for j in range(max(1, k - 4), min(pages, k + 4) + 1)
        )
        if k < pages:
            pager += f' <a href="{base}?page={k + 1}" rel="next">Next ›</a>'
        main = f"<h1>{title}</h1>{self._teasers(chunk)}<nav class=pager>{pager}</nav>"
        return self._page(title, main, {})

    def _search(self, q: dict[str, str]) -> str:
        selected: dict[str, set[str]] = {}
        for item in (q.get("f") or "").split(","):
            key, _, value = item.partition(":")
            if key and value:
                selected.setdefault(key, set()).add(value)
        posts = [
            p
            for p in self.newest
            if all(
                (str(p["date"].year) if k == "year" else p.get(k)) in v for k, v in selected.items()
            )
        ]
        if q.get("sort") == "title":
            posts = sorted(posts, key=lambda p: p["title"])
        label = ", ".join(f"{k}: {' or '.join(sorted(v))}" for k, v in sorted(selected.items()))
        main = f"<h1>Search results</h1><p>{len(posts)} results {label}</p>{self._teasers(posts[:PER_PAGE])}"
        return self._page("Search", main, selected)

    def _article(self, p: dict, printable: bool = False) -> str:
        paras = "".join(f"<p>{x}</p>" for x in p["body"])
        related = "".join(
            f'<li><a href="/node/{r["node"]}">{r["title"]}</a></li>'
            for r in self.related[p["node"]]
        )
        main = (
            f'<article><h1>{p["title"]}</h1><p class="meta">{p["date"].isoformat()} · '
            f'<a href="/search?f=topic:{p["topic"]}&amp;sort=date">{p["topic"]}</a> · '
            f'<a href="/search?f=type:{p["type"]}&amp;sort=date">{p["type"]}</a></p>{paras}'
            f'<p class="tools"><a href="/node/{p["node"]}/print">Print</a> '
            f'<a href="/node/{p["node"]}/edit">Edit</a> '
            f'<a href="/comment/reply/{p["node"]}">Add comment</a></p></article>'
            f'<section class="related"><h2>Related</h2><ul>{related}</ul></section>'
        )
        if printable:
            return f"<html><head><title>{p['title']}</title></head><body>{main}</body></html>"
        head = f'<link rel="canonical" href="{self.url(p["alias"])}">'
        return self._page(p["title"], main, {}).replace("</head>", head + "</head>", 1)
