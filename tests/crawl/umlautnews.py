"""A German regional paper on a translated CMS, on loopback: what a crawler meets on a news site
that is not in English.

Articles live at `/{ressort}/{title-slug}/`: the slug is the German title with its umlauts and ß,
which the page links percent-encoded (`/politik/b%C3%BCrgermeister-...`), or as raw UTF-8 on
half the pages (the crawler canonicalises both to one address). No id, no date: the title is
the only sign of an article. Every article links its three Schlagwörter (`/schlagwort/{tag}/`),
its author (`/autor/{name}/`), its comments (`/kommentare/{slug}/`), its print copy
(`/drucken/{ressort}/{slug}/`) and four related articles. The listings are the ones a German CMS
prints: Ressorts (`/kategorie/{ressort}/`, 10 to a page, `/seite/K/` after the first), tag and
author pages (paged the same way). Tag, author, comment and print pages are real pages with text,
and there are more of them than articles: a crawler with a budget near the number of articles
covers the paper only if it fetches articles before them.

`family(path)` says what a request was ('article', 'ressort', 'tag', 'author', 'comments',
'print', 'other').
"""

from __future__ import annotations

import random
import re
import zlib
from urllib.parse import quote, unquote

from aiohttp import web

from .loopback import LoopbackServer

RESSORTS = ("politik", "wirtschaft", "kultur", "sport", "panorama", "wissen")
WORDS = """
bürgermeister gemeinderat straßenbahn überschwemmung größere mülltrennung öffentliche
fußgängerzone prüfung gebühren häuser städtische bäckerei jugendliche grünfläche verkehrsführung
umgehungsstraße schüler förderung übernahme gewerbesteuer wählerinnen bürgerentscheid hochwasser
bauarbeiten feuerwehr einsätze kindergärten plätze müssen künftig erhöhen öffnen schließen
vorschläge ärger anwohner lösung sanierung brücke rathaus haushalt millionen investitionen
ausstellung künstler theater premiere orchester konzert museum bücherei lesung heimatverein
trainer mannschaft aufstieg niederlage tabellenführer spieltag stadion torhüter verlängerung
forscher hochschule ergebnisse studie klimaschutz wärmepumpe solaranlagen energieversorgung
""".split()
TAGS = [f"{a}-{b}" for a in WORDS[:12] for b in WORDS[40:45]]
AUTHORS = [f"{a}-{b}" for a in ("anna", "jörg", "süleyman", "brigitte", "maël") for b in "klm"]
PER_PAGE = 10


class UmlautNewsServer(LoopbackServer):
    """Serve the paper on `ip`; `url(path)` builds its URLs, `article_paths` lists the articles
    (decoded paths)."""

    label = "umlaut news server"

    def __init__(self, ip: str = "127.0.0.68", *, n_articles: int = 300, seed: int = 0):
        self.ip, self.seed = ip, seed
        rng = random.Random(seed)
        self.article_paths: list[str] = []
        self.meta: dict[str, dict] = {}
        for n in range(n_articles):
            words = rng.sample(WORDS, rng.randint(4, 7))
            title = " ".join(words).capitalize()
            ressort = RESSORTS[n % len(RESSORTS)]
            path = f"/{ressort}/{'-'.join(words)}-{'abcdefghij'[n % 10]}{n // 10}/"
            self.article_paths.append(path)
            self.meta[path] = {
                "title": title,
                "ressort": ressort,
                "body": [
                    " ".join(rng.choice(WORDS) for _ in range(rng.randint(25, 50))).capitalize()
                    + "."
                    for _ in range(rng.randint(3, 6))
                ],
                "tags": rng.sample(TAGS, 3),
                "author": rng.choice(AUTHORS),
            }
        newest = self.article_paths[::-1]
        self.lists = {
            **{
                ("kategorie", r): [p for p in newest if self.meta[p]["ressort"] == r]
                for r in RESSORTS
            },
            **{("schlagwort", t): [p for p in newest if t in self.meta[p]["tags"]] for t in TAGS},
            **{("autor", a): [p for p in newest if self.meta[p]["author"] == a] for a in AUTHORS},
        }
        self.lists = {k: v for k, v in self.lists.items() if v}
        self.related = {p: rng.sample(self.article_paths, 4) for p in self.article_paths}
        self.hits: list[str] = []
        super().__init__([ip])

    def url(self, path: str = "/") -> str:
        return f"http://{self.ip}:{self.port}{path}"

    @staticmethod
    def family(path: str) -> str:
        """What a decoded request path served."""
        head = path.strip("/").split("/")[0] if path.strip("/") else ""
        if head in RESSORTS and path.count("/") == 3:
            return "article"
        return {
            "kategorie": "ressort",
            "schlagwort": "tag",
            "autor": "author",
            "kommentare": "comments",
            "drucken": "print",
        }.get(head, "other")

    def measure(self) -> dict:
        """Coverage of the articles and what the requests went to."""
        from collections import Counter

        requests = [unquote(h) for h in self.hits if h != "/robots.txt"]
        got = set(requests) & set(self.article_paths)
        return {
            "articles": len(self.article_paths),
            "requests": len(requests),
            "coverage": round(len(got) / len(self.article_paths), 4),
            "families": dict(sorted(Counter(self.family(r) for r in requests).items())),
        }

    # --- serving -------------------------------------------------------------------------
    def _href(self, path: str, page: str) -> str:
        """A link as the page prints it: percent-encoded, or raw UTF-8 on half the pages."""
        return path if zlib.crc32(f"{self.seed}{page}".encode()) % 2 else quote(path)

    def _template(self, title: str, main: str, page: str) -> str:
        nav = "".join(f'<li><a href="/kategorie/{r}/">{r.capitalize()}</a></li>' for r in RESSORTS)
        html = (
            "<!doctype html><html lang=de><head><meta charset=utf-8>"
            f"<title>{title} | Talbote</title>"
            '<script src="/static/js/main.7c1e.js" defer></script></head><body>'
            f'<header><a href="/">Talbote</a><nav><ul>{nav}</ul></nav></header>'
            f"<main>{main}</main><footer><p>Talbote, die Heimatzeitung für das ganze Tal seit "
            '1904.</p><a href="/impressum/">Impressum</a> <a href="/datenschutz/">'
            "Datenschutz</a></footer></body></html>"
        )
        return re.sub(r'href="(/[^"]*)"', lambda m: f'href="{self._href(m.group(1), page)}"', html)

    def _teasers(self, paths: list[str]) -> str:
        return "".join(
            f'<article><h3><a href="{p}">{self.meta[p]["title"]}</a></h3>'
            f"<p>{self.meta[p]['body'][0][:150]}</p></article>"
            for p in paths
        )

    def _listing(self, kind: str, name: str, k: int, page: str) -> str | None:
        paths = self.lists.get((kind, name))
        pages = -(-len(paths) // PER_PAGE) if paths else 0
        if not 1 <= k <= pages:
            return None
        base = f"/{kind}/{name}/"
        numbers = " ".join(
            f'<a href="{base if j == 1 else f"{base}seite/{j}/"}">{j}</a>'
            for j in range(1, pages + 1)
        )
        chunk = paths[(k - 1) * PER_PAGE : k * PER_PAGE]
        main = (
            f"<h1>{name.replace('-', ' ').title()}</h1>{self._teasers(chunk)}"
            f'<nav class="pagination">{numbers}</nav>'
        )
        return self._template(f"{name}, Seite {k}", main, page)

    def _article(self, path: str, page: str) -> str:
        m = self.meta[path]
        slug = path.strip("/").split("/")[1]
        tags = " ".join(f'<a href="/schlagwort/{t}/">{t.replace("-", " ")}</a>' for t in m["tags"])
        related = "".join(
            f'<li><a href="{p}">{self.meta[p]["title"]}</a></li>' for p in self.related[path]
        )
        main = (
            f'<article><h1>{m["title"]}</h1><p>Von <a href="/autor/{m["author"]}/">'
            f"{m['author'].replace('-', ' ').title()}</a></p>"
            + "".join(f"<p>{b}</p>" for b in m["body"])
            + f'<p class="tags">Schlagwörter: {tags}</p>'
            f'<p><a href="/kommentare/{slug}/">Kommentare</a> '
            f'<a href="/drucken/{m["ressort"]}/{slug}/">Drucken</a></p></article>'
            f"<aside><h2>Auch interessant</h2><ul>{related}</ul></aside>"
        )
        return self._template(m["title"], main, page)

    def _page(self, path: str) -> str | None:  # noqa: PLR0911
        if path == "/":
            return self._template(
                "Startseite",
                f"<h1>Nachrichten aus dem Tal</h1>{self._teasers(self.article_paths[::-1][:12])}",
                path,
            )
        if path in self.meta:
            return self._article(path, path)
        parts = path.strip("/").split("/")
        if parts[0] in ("kategorie", "schlagwort", "autor") and len(parts) in (2, 4):
            k = 1
            if len(parts) == 4:
                if parts[2] != "seite" or not parts[3].isdigit():
                    return None
                k = int(parts[3])
            return self._listing(parts[0], parts[1], k, path)
        if parts[0] == "kommentare" and len(parts) == 2:
            return self._template(
                "Kommentare",
                f"<h1>Kommentare</h1><p>Noch keine Kommentare zu {parts[1].replace('-', ' ')}. "
                "Melden Sie sich an, um zu kommentieren.</p>",
                path,
            )
        if parts[0] == "drucken" and len(parts) == 3:
            art = f"/{parts[1]}/{parts[2]}/"
            return self._article(art, path) if art in self.meta else None
        if path in ("/impressum/", "/datenschutz/"):
            return self._template(parts[0].title(), f"<h1>{parts[0].title()}</h1>", path)
        return None

    async def _handle(self, request: web.Request) -> web.Response:
        raw = request.raw_path
        self.hits.append(raw)
        if raw == "/robots.txt":
            return web.Response(text="User-agent: *\nDisallow:\n")
        if raw.startswith("/static/"):
            return web.Response(text="/* bundle */", content_type="application/javascript")
        page = self._page(unquote(raw.split("?")[0]))
        if page is None:
            return web.Response(
                status=404, text="<h1>Nicht gefunden</h1>", content_type="text/html"
            )
        return web.Response(text=page, content_type="text/html")
