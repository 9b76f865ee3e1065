"""A news-like host on loopback, full of real articles and of crawler traps.

Articles (all distinct text, seeded): `/YYYY/MM/DD/slug-words`, `/story/NNNNNN` and
`/item?id=N`, listed 20 to a page by `/news?page=N`, each also linking to two related
articles. Traps, each reachable from the home page and each unbounded:

- calendar: `/cal/YYYY/MM?day=D` with prev/next-day links forever;
- session ids: `/account?sessid=TOKEN` and `/promo?ref=TOKEN` hand out a fresh random token on
  every response and put it on every link; `?sid=TOKEN` (which canonicalisation strips);
- sort/order: `/list?sort=S&order=O&page=N` links to every permutation and to the next page,
  forever, always listing the same articles;
- deepening: `/a/b/` links to the relative `a/b/` (`/a/b/a/b/...`), and `/deep/x1/` to
  `x2/`, `x3/`, ... (no repeated segment);
- near-identical pages: `/gen/TOKEN` pages with the same text, each linking to two new ones.

`family(path)` names the family of a requested path, so a test can count what each cost.
Runs in a daemon thread with its own loop; the context manager stops it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from urllib.parse import parse_qs, urlsplit

from aiohttp import web

from .loopback import LoopbackServer

WORDS = (
    "river harbour council budget election minister vaccine hospital storm flood school teacher "
    "festival concert museum painting football league striker coach market shares bank inflation "
    "startup software satellite rocket climate glacier drought farmers harvest wheat railway "
    "bridge tunnel airport ferry island mountain village mayor court judge verdict police "
    "theft fire brigade rescue volunteers charity library archive novel author poet film "
    "director actor theatre opera orchestra scientist laboratory experiment discovery fossil "
    "species forest wildlife ocean coral fishing trade exports tariff factory workers strike "
    "union wages housing rent mortgage prices energy solar wind turbine grid battery electric "
    "vehicle traffic cyclists pedestrians park garden bakery restaurant chef recipe wine cheese "
    "tourism hotel beach summer winter snow rainfall heatwave research university students exam"
).split()
FAMILIES = ("article", "index", "calendar", "session", "sort", "deepening", "near-duplicate")


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _page(title: str, body: str, links: list[tuple[str, str]]) -> bytes:
    items = "".join(f'<li><a href="{href}">{text}</a></li>' for href, text in links)
    nav = '<nav><a href="/">Home</a> <a href="/about">About us</a> <a href="/news?page=1">Latest news</a></nav>'
    return (
        f"<!doctype html><html><head><title>{title}</title></head><body>{nav}"
        f"<h1>{title}</h1>{body}<ul>{items}</ul><footer>Loopback Gazette</footer></body></html>"
    ).encode()


class NewsServer(LoopbackServer):
    """Serve the news host on `ip`; `url(path)` builds its URLs, `articles` lists them."""

    def __init__(self, ip: str = "127.0.0.61", *, n_articles: int = 2000, seed: int = 0):
        self.ip, self.seed, self.port = ip, seed, 0
        self.per_page = 20
        rng = random.Random(seed)
        day0 = dt.date(2023, 1, 1)
        self.article_paths: list[str] = []
        self.texts: dict[str, tuple[str, str]] = {}
        for n in range(n_articles):
            title = _words(rng, 6).capitalize()
            text = " ".join(
                f"<p>{_words(rng, rng.randint(25, 45)).capitalize()}.</p>"
                for _ in range(rng.randint(3, 6))
            )
            kind = n % 3
            if kind == 0:
                d = day0 + dt.timedelta(days=n // 3)
                slug = "-".join(title.lower().split()[:4]) + f"-{n}"
                path = f"/{d.year}/{d.month:02d}/{d.day:02d}/{slug}"
            elif kind == 1:
                path = f"/story/{100000 + n * 7}"
            else:
                path = f"/item?id={n}"
            self.article_paths.append(path)
            self.texts[path] = (title, text)
        self.related = {
            p: [self.article_paths[rng.randrange(n_articles)] for _ in range(2)]
            for p in self.article_paths
        }
        self.pages = (n_articles + self.per_page - 1) // self.per_page
        self.hits: list[str] = []  # request path + query, in order
        self._tokens = 0
        super().__init__([self.ip])

    # --- helpers for tests ---------------------------------------------------------------
    def url(self, path: str = "/") -> str:
        """Absolute URL of a path on the host."""
        return f"http://{self.ip}:{self.port}{path}"

    @property
    def articles(self) -> list[str]:
        """Absolute URLs of every article."""
        return [self.url(p) for p in self.article_paths]

    @staticmethod
    def family(path_qs: str) -> str:
        """Which family a requested path belongs to ('article', 'calendar', ... or 'other')."""
        parts = urlsplit(path_qs)
        path, query = parts.path, parse_qs(parts.query)
        if path.startswith("/cal/"):
            return "calendar"
        if path.startswith(("/account", "/promo")) or "sid" in query:
            return "session"
        if path == "/list":
            return "sort"
        if path.startswith(("/a/", "/deep/")):
            return "deepening"
        if path.startswith("/gen/"):
            return "near-duplicate"
        if path == "/news":
            return "index"
        if path.startswith("/story/") or path == "/item" or path[1:5].isdigit():
            return "article"
        return "other"

    def _token(self) -> str:
        self._tokens += 1
        return hashlib.sha1(f"{self.seed}:{self._tokens}".encode()).hexdigest()[:20]

    async def _handle(self, request: web.Request) -> web.Response:
        self.hits.append(request.path_qs)
        body = self._respond(request.path, request.query_string, request.query)
        if body is None:
            return web.Response(status=404, text="not found")
        if isinstance(body, str):
            return web.Response(text=body, content_type="text/plain")
        return web.Response(body=body, content_type="text/html", charset="utf-8")

    def _respond(self, path: str, qs: str, q) -> bytes | str | None:  # noqa: C901, PLR0911
        if path == "/robots.txt":
            return "User-agent: *\nDisallow: /private/\n"
        if path == "/":
            token = self._token()
            return _page(
                "Loopback Gazette",
                "<p>Independent local news since 1901.</p>",
                [
                    ("/news?page=1", "All news"),
                    ("/cal/2024/05?day=12", "Events calendar"),
                    (f"/account?sessid={token}", "Your account"),
                    (f"/promo?ref={token}", "Offers"),
                    (f"/weather?sid={token}", "Weather"),
                    ("/list?sort=date&order=desc", "Sorted list"),
                    ("/a/b/", "Section A/B"),
                    ("/deep/x1/", "Deep section"),
                    (f"/gen/{self._token()}", "Generated"),
                ],
            )
        if path == "/about":
            return _page("About us", "<p>We report on the river town and its people.</p>", [])
        if path == "/weather":
            return _page("Weather", "<p>Rain later, clearing by the evening.</p>", [])
        if path == "/news":
            n = int(q.get("page", "1"))
            if not 1 <= n <= self.pages:
                return None
            chunk = self.article_paths[(n - 1) * self.per_page : n * self.per_page]
            links = [(p, self.texts[p][0]) for p in chunk]
            links += [
                (f"/news?page={k}", f"page {k}") for k in (n - 1, n + 1) if 1 <= k <= self.pages
            ]
            return _page(f"News page {n}", "<p>The latest stories.</p>", links)
        key = f"{path}?{qs}" if qs else path
        if key in self.texts:
            title, text = self.texts[key]
            links = [(p, self.texts[p][0]) for p in self.related[key]]
            return _page(title, text, links)
        if path.startswith("/cal/"):
            _, _, y, m = path.split("/")
            d = dt.date(int(y), int(m), int(q.get("day", "1")))
            links = [
                (f"/cal/{x.year}/{x.month:02d}?day={x.day}", label)
                for x, label in (
                    (d - dt.timedelta(days=1), "previous day"),
                    (d + dt.timedelta(days=1), "next day"),
                )
            ]
            return _page(
                f"Events on {d.isoformat()}", "<p>No events are listed for this day.</p>", links
            )
        if path.startswith(("/account", "/promo")):
            token = self._token()
            name = "sessid" if path.startswith("/account") else "ref"
            base = "/account" if name == "sessid" else "/promo"
            subs = ["", "/orders", "/settings", "/help"]
            links = [(f"{base}{s}?{name}={token}", f"{base}{s}") for s in subs]
            return _page("Your session", "<p>Manage your account and your offers here.</p>", links)
        if path == "/list":
            page = int(q.get("page", "1"))
            links = [
                (f"/list?sort={s}&order={o}&page={page}", f"{s} {o}")
                for s in ("date", "title", "author", "views")
                for o in ("asc", "desc")
            ]
            links.append(
                (
                    f"/list?sort={q.get('sort', 'date')}&order={q.get('order', 'desc')}&page={page + 1}",
                    "next",
                )
            )
            titles = "".join(f"<p>{self.texts[p][0]}</p>" for p in self.article_paths[:20])
            return _page("Sorted list", titles, links)
        if path.startswith("/a/"):
            return _page("Section", "<p>Section page.</p>", [("a/b/", "deeper")])
        if path.startswith("/deep/"):
            n = len([s for s in path.split("/") if s])
            return _page("Deep section", "<p>Deeper and deeper.</p>", [(f"x{n}/", "deeper")])
        if path.startswith("/gen/"):
            links = [(f"/gen/{self._token()}", "more"), (f"/gen/{self._token()}", "even more")]
            body = "<p>This page is generated. Nothing to read here, come back later for more content.</p>"
            return _page("Generated page", body, links)
        return None
