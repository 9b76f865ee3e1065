"""A news blog on WordPress-like software, on loopback: a third news host, built unlike ours.

Posts live at `/YYYY/MM/slug/`; `/?p=ID` shortlinks and old `/archives/ID` permalinks reach them
through 301/302 chains (`/archives/ID` -> `/?p=ID` -> `/YYYY/MM/slug` -> `/YYYY/MM/slug/`).
The blog's old address (`127.0.1.N`, another origin) answers everything with a 301 to the same
path here, and posts still link it. Listings: the home page (`/page/N/`), category archives whose further pages are announced only in
`<link rel=next>` (an infinite-scroll theme: the body has a "Load more" button and no link), tag
archives paged `?paged=N`, author archives, and date archives (`/YYYY/`, `/YYYY/MM/`, `/YYYY/MM/DD/`,
`/?m=YYYYMM`) whose "older/newer month" links go on for ever (empty months answer 200 "Nothing
found"). Category pages carry `<base href>` and base-relative links; posts link each other with
`../` paths and `?p=ID` shortlinks, and Jetpack-style related posts add `relatedposts_*` tracking.

What multiplies URLs, as on real WordPress sites: `?replytocom=N` on every comment's reply link,
`/comment-page-N/` comment pages, `?amp=1` and `/amp/` copies, `?print=1`, `?share=email`,
`utm_*`/`fbclid`/`gclid` on newsletter and social links, `/wp-login.php?redirect_to=<this page>`,
session ids on the links of a visitor without cookies (`;jsessionid=`, `?PHPSESSID=`, a random
`?sk=` token), and copies that say `<link rel=canonical>` to the post. Dead ends: attachment pages
that answer 410, old permalinks of deleted posts (404), tags that no longer exist (a soft 404: 200
"Nothing found"), and media files and feeds (not HTML). robots.txt announces a sitemap index
(the latest posts only, as a news sitemap does).

Every request is logged with what it served (`log`: raw path, kind, post), so `measure` counts
coverage (posts served under any URL) and the trap share (requests to variants and empty calendar
pages) exactly. Runs in a daemon thread with its own loop; the context manager stops it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import re
from collections import Counter
from urllib.parse import parse_qsl, quote, urlsplit

from aiohttp import web

from .loggedhost import LoggedNewsHost
from .newsserver import WORDS

CATEGORIES = ("world", "politics", "business", "science", "sport", "culture", "travel", "food")
PER_PAGE = 10
COMMENTS_PER_PAGE = 5
TRAP_KINDS = ("variant", "calendar")
_SESSION_STYLES = (None, ";jsessionid", "PHPSESSID", "sk")
_TRACKING = re.compile(r"^(utm_\w+|fbclid|gclid)$")
_JSESSION = re.compile(r";jsessionid=[^/?#]*", re.I)


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


class WordPressNewsServer(LoggedNewsHost):
    """Serve the blog on `ip`; `url(path)` builds its URLs, `article_paths` lists the posts."""

    label = "WordPress-like news server"

    def __init__(self, ip: str = "127.0.0.70", *, n_articles: int = 300, seed: int = 0):
        self.ip, self.seed, self.port = ip, seed, 0
        rng = random.Random(seed * 7919 + 17)
        t0 = dt.datetime(2019, 3, 1, 8)
        self.tags = [f"{rng.choice(WORDS)}-{rng.choice(WORDS)}" for _ in range(30)]
        self.tags = list(dict.fromkeys(self.tags))
        self.authors = [f"{rng.choice(WORDS)}-{rng.choice(WORDS)}" for _ in range(12)]
        self.posts: list[dict] = []
        self.by_id: dict[int, dict] = {}
        self.by_path: dict[str, dict] = {}
        slugs: set[str] = set()
        for i in range(n_articles):
            when = t0 + dt.timedelta(hours=8 * i)
            title = _words(rng, rng.randint(5, 9)).capitalize()
            slug = "-".join(title.lower().split()[:6])
            if slug in slugs:
                slug = f"{slug}-{i}"
            slugs.add(slug)
            brief = rng.random() < 0.3  # a custom post type: only in /briefs/ (rel=next paging)
            post = {
                "i": i,
                "kind": "brief" if brief else "post",
                "id": 1000 + 3 * i + rng.randint(0, 2),
                "title": title,
                "slug": slug,
                "date": when,
                "path": f"/briefs/{slug}/" if brief else f"/{when.year}/{when.month:02d}/{slug}/",
                "category": rng.choice(CATEGORIES),
                "tags": rng.sample(self.tags, 2),
                "author": rng.choice(self.authors),
                "body": [
                    _words(rng, rng.randint(30, 60)).capitalize() + "."
                    for _ in range(rng.randint(3, 7))
                ],
                "comments": [
                    (4000 + 20 * i + c, _words(rng, rng.randint(8, 20)).capitalize())
                    for c in range(rng.choice((0, 1, 2, 3, 4, 6, 8, 12)))
                ],
                "dead_tag": f"old-{rng.choice(WORDS)}-{rng.randint(1, 300)}"
                if rng.random() < 0.3
                else None,
                "old_id": rng.choice(self.posts)["id"]
                if self.posts and rng.random() < 0.5
                else rng.randint(1, 999),
                "syndicated": rng.random() < 0.05,
            }
            self.posts.append(post)
            self.by_id[post["id"]] = post
            self.by_path[post["path"]] = post
        self.article_paths = [p["path"] for p in self.posts]
        self.blog = [p for p in self.posts if p["kind"] == "post"]
        for j, p in enumerate(self.blog):
            p["j"] = j
        self.newest = self.blog[::-1]
        self.briefs = [p for p in self.posts if p["kind"] == "brief"][::-1]
        self.months = sorted({(p["date"].year, p["date"].month) for p in self.blog})
        self.related = {p["id"]: rng.sample(self.blog, min(3, len(self.blog))) for p in self.posts}
        self.log: list[tuple[str, str, str | None]] = []  # (raw path, kind, post path)
        self._tokens = 0
        # the blog's old address (another origin: apex vs www, an old domain) answers every
        # request with a 301 to the same path here; editors still paste links to it
        self.old_ip = "127.0.1." + ip.rsplit(".", 1)[1]
        super().__init__([self.ip, self.old_ip])

    # --- helpers for tests ------------------------------------------------------------
    def measure(self) -> dict:
        """Coverage (posts served under any URL, share) and what the requests went to; robots.txt
        and sitemaps are not content requests."""
        out, got = self.measure_log(
            not_content=("robots", "sitemap"),
            trap_kinds=TRAP_KINDS,
            content=("article", "variant"),
        )
        by_kind = Counter(self.by_path[p]["kind"] for p in got)
        return {**out, "by_kind": dict(sorted(by_kind.items()))}

    # --- serving ----------------------------------------------------------------------
    def _token(self, n: int = 32) -> str:
        self._tokens += 1
        return hashlib.sha1(f"{self.seed}:{self._tokens}".encode()).hexdigest()[:n]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = request.raw_path
        if request.url.host == self.old_ip:
            self.log.append((raw, "robots" if raw == "/robots.txt" else "redirect", None))
            return web.Response(status=301, headers={"Location": self.url(raw)})
        parts = urlsplit(raw)
        path = _JSESSION.sub("", parts.path)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        noise = path != parts.path or any(
            _TRACKING.match(k) or k in ("PHPSESSID", "sk") or k.startswith("relatedposts")
            for k, _ in pairs
        )
        q = {
            k: v
            for k, v in pairs
            if not (_TRACKING.match(k) or k in ("PHPSESSID", "sk") or k.startswith("relatedposts"))
        }
        resp, kind, post = self._route(path, q)
        if noise and kind in ("article", "listing", "other"):
            kind = "variant"
        self.log.append((raw, kind, post))
        if isinstance(resp, str):
            resp = web.Response(text=self._session(resp, raw), content_type="text/html")
        return resp

    def _route(self, path: str, q: dict[str, str]):  # noqa: PLR0911, PLR0912
        if path == "/robots.txt":
            return web.Response(text=self._robots()), "robots", None
        if path.endswith(".xml"):
            return self._sitemap(path)
        if path.startswith("/wp-content/uploads/"):
            return (
                web.Response(body=b"\xff\xd8\xff\xe0 jpeg", content_type="image/jpeg"),
                "media",
                None,
            )
        if path == "/feed/" or path.endswith("/feed/"):
            rss = '<?xml version="1.0"?><rss version="2.0"><channel><title>Feed</title></channel></rss>'
            return web.Response(text=rss, content_type="application/rss+xml"), "media", None
        if path == "/wp-login.php":
            return self._login(q), "variant" if "redirect_to" in q else "other", None
        if path.startswith("/archives/"):
            tail = path.removeprefix("/archives/").strip("/")
            if tail.isdigit() and int(tail) in self.by_id:
                return self._redirect(f"/?p={tail}", 302), "redirect", None
            return self._not_found(), "dead", None
        if path == "/":
            return self._root(q)
        m = re.fullmatch(r"/(\d{4})/(\d\d)/([a-z0-9-]+)(/.*)?", path)
        if m and not m.group(3).isdigit() and m.group(3) != "page":
            return self._post_route(f"/{m.group(1)}/{m.group(2)}/{m.group(3)}/", m.group(4), q)
        m = re.fullmatch(r"/(\d{4})(?:/(\d\d))?(?:/(\d\d))?/(?:page/(\d+)/)?", path)
        if m:
            y, mo, d, k = (int(x) if x else None for x in m.groups())
            return self._date_archive(y, mo, d, k or 1)
        m = re.fullmatch(r"/briefs/(?:page/(\d+)/)?", path)
        if m:
            return self._briefs(int(m.group(1) or 1))
        m = re.fullmatch(r"/briefs/([a-z0-9-]+)(/.*)?", path)
        if m and m.group(1) != "page":
            return self._post_route(f"/briefs/{m.group(1)}/", m.group(2), q)
        m = re.fullmatch(r"/(category|tag|author)/([a-z0-9-]+)/(?:page/(\d+)/)?", path)
        if m:
            return self._archive(m.group(1), m.group(2), int(m.group(3) or q.get("paged") or 1))
        m = re.fullmatch(r"/page/(\d+)/", path)
        if m:
            return self._home(int(m.group(1)))
        if path in ("/about/", "/contact/"):
            name = path.strip("/").capitalize()
            return (
                self._template(name, f"<h1>{name}</h1><p>{name} of the Gazette.</p>", path),
                "other",
                None,
            )
        return self._not_found(), "dead", None

    def _robots(self) -> str:
        return (
            "User-agent: *\nDisallow: /wp-admin/\nAllow: /wp-admin/admin-ajax.php\n\n"
            f"Sitemap: {self.url('/sitemap_index.xml')}\n"
        )

    def _sitemap(self, path: str):
        def urlset(paths: list[str]) -> str:
            locs = "".join(f"<url><loc>{self.url(p)}</loc></url>" for p in paths)
            return (
                '<?xml version="1.0" encoding="UTF-8"?><urlset '
                f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'
            )

        if path == "/sitemap_index.xml":
            maps = "".join(
                f"<sitemap><loc>{self.url(p)}</loc></sitemap>"
                for p in ("/news-sitemap.xml", "/category-sitemap.xml", "/page-sitemap.xml")
            )
            body = (
                '<?xml version="1.0" encoding="UTF-8"?><sitemapindex '
                f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{maps}</sitemapindex>'
            )
        elif path == "/news-sitemap.xml":  # a news sitemap lists the latest posts only
            body = urlset([p["path"] for p in self.newest[:50]])
        elif path == "/category-sitemap.xml":
            body = urlset([f"/category/{c}/" for c in CATEGORIES])
        elif path == "/page-sitemap.xml":
            body = urlset(["/about/", "/contact/"])
        else:
            return self._not_found(), "dead", None
        return web.Response(text=body, content_type="application/xml"), "sitemap", None

    def _redirect(self, to: str, status: int = 301) -> web.Response:
        return web.Response(status=status, headers={"Location": to})

    def _not_found(self, status: int = 404) -> web.Response:
        html = self._template(
            "Page not found",
            "<h1>Oops! That page can&rsquo;t be found.</h1><p>It looks like nothing was found at "
            "this location. Maybe try one of the links below or a search?</p>",
            "/404",
        )
        return web.Response(status=status, text=html, content_type="text/html")

    def _root(self, q: dict[str, str]):
        if "p" in q:
            post = self.by_id.get(int(q["p"])) if q["p"].isdigit() else None
            if post is None:
                return self._not_found(), "dead", None
            return self._redirect(post["path"].rstrip("/")), "redirect", None
        if "m" in q and re.fullmatch(r"\d{6}", q["m"]):
            return self._date_archive(int(q["m"][:4]), int(q["m"][4:]), None, 1)
        if "paged" in q and q["paged"].isdigit():
            return self._home(int(q["paged"]))
        return self._home(1)

    def _post_route(self, path: str, rest: str | None, q: dict[str, str]):
        post = self.by_path.get(path)
        if post is None:
            return self._not_found(), "dead", None
        if rest is None:
            return self._redirect(path), "redirect", None  # /YYYY/MM/slug -> .../slug/
        rest = rest.strip("/")
        if rest.startswith("attachment/"):
            return self._not_found(410), "dead", None
        if rest == "amp":
            return self._article(post, amp=True), "variant", post["path"]
        m = re.fullmatch(r"comment-page-(\d+)", rest)
        if m:
            k = int(m.group(1))
            pages = max(1, -(-len(post["comments"]) // COMMENTS_PER_PAGE))
            if not 1 <= k <= pages:
                return self._not_found(), "dead", None
            return self._article(post, cpage=k), "variant", post["path"]
        if rest:
            return self._not_found(), "dead", None
        if q.get("share"):
            form = (
                f"<h1>Share this: {post['title']}</h1><form method=post><input name=to>"
                "<button>Send</button></form>"
            )
            return self._template("Share", form, path), "variant", None
        variant = bool(q)  # ?replytocom=, ?amp=1, ?print=1: the post again
        html = self._article(
            post, amp="amp" in q, printable="print" in q, reply=q.get("replytocom")
        )
        return html, "variant" if variant else "article", post["path"]

    # --- pages ------------------------------------------------------------------------
    def _session(self, html: str, raw: str) -> str:
        """A visitor without cookies: some pages put a session id on every internal link."""
        style = _SESSION_STYLES[int(hashlib.md5(raw.encode()).hexdigest(), 16) % 4]
        if style is None:
            return html
        token = self._token(26 if style == "PHPSESSID" else 32)

        def add(m: re.Match) -> str:
            href = m.group(2)
            if href.startswith(("#", "http://", "https://", "mailto:")) or "/wp-content/" in href:
                return m.group(0)
            path, hashmark, frag = href.partition("#")
            if style == ";jsessionid":
                p, qm, qs = path.partition("?")
                path = f"{p};jsessionid={token.upper()}{qm}{qs}"
            else:
                path += f"{'&amp;' if '?' in path else '?'}{style}={token}"
            return f'{m.group(1)}{path}{hashmark}{frag}"'

        return re.sub(r'(<a\b[^>]*?\shref=")([^"]*)"', add, html)

    def _sidebar(self, path: str, month: tuple[int, int]) -> str:
        recent = "".join(
            f'<li><a href="{p["path"]}">{p["title"]}</a></li>' for p in self.newest[:5]
        )
        archives = "".join(
            f'<li><a href="/{y}/{m:02d}/">{dt.date(y, m, 1):%B %Y}</a></li>'
            for y, m in self.months[::-1]
        )
        cloud = " ".join(f'<a href="/tag/{t}/">{t.replace("-", " ")}</a>' for t in self.tags)
        y, m = month
        days = sorted(
            {p["date"].day for p in self.blog if (p["date"].year, p["date"].month) == (y, m)}
        )
        cal_days = " ".join(f'<a href="/{y}/{m:02d}/{d:02d}/">{d}</a>' for d in days)
        py, pm = (y, m - 1) if m > 1 else (y - 1, 12)
        ny, nm = (y, m + 1) if m < 12 else (y + 1, 1)
        return (
            '<aside id="secondary" class="widget-area">'
            f'<section class="widget widget_recent_entries"><h2>Recent Posts</h2><ul>{recent}</ul>'
            f'</section><section class="widget widget_archive"><h2>Archives</h2><ul>{archives}'
            f'</ul></section><section class="widget widget_tag_cloud"><h2>Tags</h2>{cloud}'
            f'</section><section class="widget widget_calendar"><table id="wp-calendar">'
            f"<caption>{dt.date(y, m, 1):%B %Y}</caption><tr><td>{cal_days}</td></tr></table>"
            f'<nav><a href="/?m={py}{pm:02d}">&laquo; {dt.date(py, pm, 1):%b}</a> '
            f'<a href="/?m={ny}{nm:02d}">{dt.date(ny, nm, 1):%b} &raquo;</a></nav></section>'
            '<section class="widget widget_meta"><h2>Meta</h2><ul>'
            f'<li><a href="/wp-login.php?redirect_to={quote(self.url(path), safe="")}">Log in</a>'
            '</li><li><a href="/feed/">Entries feed</a></li></ul></section></aside>'
        )

    def _template(
        self, title: str, main: str, path: str, *, head: str = "", month=None, base: bool = False
    ) -> str:
        nav = "".join(f'<li><a href="/category/{c}/">{c.capitalize()}</a></li>' for c in CATEGORIES)
        month = month or (self.blog[-1]["date"].year, self.blog[-1]["date"].month)
        base_tag = f'<base href="{self.url("/")}">' if base else ""
        return (
            f"<!DOCTYPE html><html lang=en-US><head><meta charset=UTF-8>{base_tag}"
            f"<title>{title} &#8211; The Lakeside Gazette</title>"
            "<link rel='stylesheet' href='/wp-content/themes/gazette/style.css?ver=5.8' />"
            "<script src='/wp-includes/js/jquery/jquery.min.js?ver=3.6.0'></script>"
            f'<link rel="alternate" type="application/rss+xml" href="/feed/">{head}</head>'
            '<body class="wp-site-blocks"><header id="masthead" class="site-header">'
            '<p class="site-title"><a href="/" rel="home">The Lakeside Gazette</a></p>'
            f'<nav id="site-navigation" class="main-navigation"><ul>{nav}'
            '<li><a href="/briefs/">Briefs</a></li><li><a href="/about/">About</a></li>'
            '<li><a href="/contact/">Contact</a></li></ul>'
            f'</nav></header><div id="content" class="site-content"><main id="main">{main}</main>'
            f"{self._sidebar(path, month)}</div>"
            '<footer id="colophon" class="site-footer"><p>The Lakeside Gazette, news from the '
            "lake towns since 1952.</p><p>Proudly powered by WordPress</p></footer></body></html>"
        )

    def _listing(self, title: str, posts: list[dict], path: str, *, base: bool = False) -> str:
        def href(p: dict) -> str:
            return p["path"].lstrip("/") if base else p["path"]

        items = "".join(
            f'<article class="post-{p["id"]} post"><h2 class="entry-title"><a href="{href(p)}" '
            f'rel="bookmark">{p["title"]}</a></h2><div class="entry-summary"><p>'
            f"{p['body'][0][:150]} [&hellip;]</p></div>"
            f'<a class="more-link" href="{href(p)}#more-{p["id"]}">Continue reading</a> '
            f'<a href="{href(p)}#respond">Leave a comment</a></article>'
            for p in posts
        )
        return f'<h1 class="page-title">{title}</h1>{items}'

    def _paged(self, posts: list[dict], k: int):
        pages = max(1, -(-len(posts) // PER_PAGE))
        return posts[(k - 1) * PER_PAGE : k * PER_PAGE], pages

    def _home(self, k: int):
        chunk, pages = self._paged(self.newest, k)
        if not 1 <= k <= pages:
            return self._not_found(), "dead", None
        nav = '<nav class="nav-links">'
        if k < pages:
            nav += f'<a class="next" href="/page/{k + 1}/">Older posts</a>'
        if k > 1:
            nav += f'<a class="prev" href="{"/" if k == 2 else f"/page/{k - 1}/"}">Newer posts</a>'
        main = self._listing("Latest news", chunk, "/") + nav + "</nav>"
        return self._template("Home", main, "/" if k == 1 else f"/page/{k}/"), "listing", None

    def _briefs(self, k: int):
        """The briefs' archive: an infinite-scroll theme, further pages only in <link rel=next>."""
        chunk, pages = self._paged(self.briefs, k)
        if not 1 <= k <= pages:
            return self._not_found(), "dead", None
        here = "/briefs/" + (f"page/{k}/" if k > 1 else "")
        head = f'<link rel="next" href="/briefs/page/{k + 1}/">' if k < pages else ""
        if k > 1:
            head += f'<link rel="prev" href="{"/briefs/" if k == 2 else f"/briefs/page/{k - 1}/"}">'
        main = self._listing("Briefs", chunk, here)
        main += '<div class="infinite-loader"><button type="button">Load more briefs</button></div>'
        return self._template("Briefs", main, here, head=head), "listing", None

    def _archive(self, kind: str, name: str, k: int):
        if kind == "category":
            posts = [p for p in self.newest if p["category"] == name]
        elif kind == "tag":
            posts = [p for p in self.newest if name in p["tags"]]
        else:
            posts = [p for p in self.newest if p["author"] == name]
        if not posts:
            if kind == "tag":  # a tag that no longer exists: a soft 404
                html = self._template(
                    "Nothing Found",
                    "<h1>Nothing Found</h1><p>It seems we can&rsquo;t find what you&rsquo;re "
                    "looking for. Perhaps searching can help.</p>",
                    f"/tag/{name}/",
                )
                return html, "dead", None
            return self._not_found(), "dead", None
        chunk, pages = self._paged(posts, k)
        if not 1 <= k <= pages:
            return self._not_found(), "dead", None
        here = f"/{kind}/{name}/" + (f"page/{k}/" if k > 1 else "")
        title = f"{kind.capitalize()}: {name.replace('-', ' ').title()}"
        if kind == "category":  # infinite scroll: further pages only in <link rel=next>
            head = f'<link rel="next" href="/category/{name}/page/{k + 1}/">' if k < pages else ""
            main = self._listing(title, chunk, here, base=True)
            main += '<button class="load-more" type="button">Load more</button>'
            return self._template(title, main, here, head=head, base=True), "listing", None
        if kind == "tag":
            nums = " ".join(
                f'<a class="page-numbers" href="/tag/{name}/?paged={j}">{j}</a>'
                for j in range(1, pages + 1)
                if j != k
            )
        else:
            nums = " ".join(
                f'<a class="page-numbers" href="/author/{name}/page/{j}/">{j}</a>'
                for j in range(max(1, k - 2), min(pages, k + 2) + 1)
                if j != k
            )
        main = self._listing(title, chunk, here) + f'<nav class="pagination">{nums}</nav>'
        return self._template(title, main, here), "listing", None

    def _date_archive(self, y: int, mo: int | None, d: int | None, k: int):
        if not 1990 <= y <= 2100 or (mo is not None and not 1 <= mo <= 12):
            return self._not_found(), "dead", None
        posts = [
            p
            for p in self.newest
            if p["date"].year == y
            and (mo is None or p["date"].month == mo)
            and (d is None or p["date"].day == d)
        ]
        here = f"/{y}/" + (f"{mo:02d}/" if mo else "") + (f"{d:02d}/" if d else "")
        month = (y, mo or 1)
        nav = ""
        if mo is not None and d is None:  # older/newer month, for ever
            py, pm = (y, mo - 1) if mo > 1 else (y - 1, 12)
            ny, nm = (y, mo + 1) if mo < 12 else (y + 1, 1)
            nav = (
                f'<nav class="month-nav"><a href="/{py}/{pm:02d}/">&laquo; Older month</a> '
                f'<a href="/{ny}/{nm:02d}/">Newer month &raquo;</a></nav>'
            )
        if not posts:
            main = (
                f"<h1>Archives: {here.strip('/')}</h1><p>Nothing found for this period. Try the "
                f"archives of another month.</p>{nav}"
            )
            return self._template("Nothing found", main, here, month=month), "calendar", None
        chunk, pages = self._paged(posts, k)
        if not 1 <= k <= pages:
            return self._not_found(), "dead", None
        if k < pages:
            nav += f'<a class="next" href="{here}page/{k + 1}/">Older posts</a>'
        main = self._listing(f"Archives: {here.strip('/')}", chunk, here) + nav
        return self._template("Archives", main, here, month=month), "listing", None

    def _login(self, q: dict[str, str]) -> str:
        form = (
            '<h1>Log In</h1><form name="loginform" method="post"><p><label>Username or Email '
            'Address<input name="log"></label></p><p><label>Password<input type="password" '
            f'name="pwd"></label></p><input type="hidden" name="redirect_to" value="'
            f'{q.get("redirect_to", "")}"><button>Log In</button></form>'
            '<p><a href="/wp-login.php?action=lostpassword">Lost your password?</a></p>'
        )
        return f"<!DOCTYPE html><html><head><title>Log In</title></head><body>{form}</body></html>"

    def _article(  # noqa: PLR0913
        self,
        post: dict,
        *,
        amp: bool = False,
        printable: bool = False,
        reply: str | None = None,
        cpage: int = 0,
    ) -> str:
        p, path = post, post["path"]
        canonical = (
            f"https://partner-paper.example/{p['slug']}" if p["syndicated"] else self.url(path)
        )
        head = (
            f'<link rel="canonical" href="{canonical}">'
            f'<link rel="shortlink" href="{self.url("/?p=" + str(p["id"]))}">'
            f'<link rel="amphtml" href="{path}amp/">'
        )
        j = p.get("j", -1)  # briefs have no previous/next post
        prev_post = self.blog[j - 1] if j > 0 else None
        next_post = self.blog[j + 1] if 0 <= j < len(self.blog) - 1 else None

        def short(q: dict) -> str:
            return f"/?p={q['id']}" if q["i"] % 3 == 0 else q["path"]

        def rel(q: dict) -> str:  # a relative link from this post's directory
            return "../../../" + q["path"].lstrip("/")

        paras = list(p["body"])
        if len(paras) > 1:
            other = self.related[p["id"]][0]
            paras[1] += f' See also <a href="{rel(other)}">{other["title"].lower()}</a>.'
        if len(paras) > 3:  # a link pasted from the old address
            old = self.related[p["id"]][1]
            paras[3] += (
                f' Read <a href="http://{self.old_ip}:{self.port}{old["path"]}">our earlier '
                "report</a>."
            )
        if len(paras) > 2:
            paras[2] += (
                f' As we <a href="/archives/{p["old_id"]}">reported before</a>, the story goes on.'
            )
        body = "".join(f"<p>{x}</p>" for x in paras)
        img = f"/wp-content/uploads/{p['date'].year}/{p['date'].month:02d}/img-{p['id']}.jpg"
        figure = (
            f'<figure class="wp-block-image"><a href="{img}"><img src="{img}" alt=""></a>'
            f'<figcaption><a href="{path}attachment/img-{p["id"]}/">View image page</a>'
            "</figcaption></figure>"
        )
        tags = [*p["tags"], *([p["dead_tag"]] if p["dead_tag"] else [])]
        tag_links = ", ".join(f'<a href="/tag/{t}/" rel="tag">{t}</a>' for t in tags)
        meta = (
            f'<div class="entry-meta">Posted on <a href="/{p["date"]:%Y/%m/%d}/">'
            f'{p["date"]:%B %d, %Y}</a> by <a href="/author/{p["author"]}/">'
            f"{p['author'].replace('-', ' ').title()}</a> in "
            f'<a href="/category/{p["category"]}/" rel="category tag">{p["category"]}</a></div>'
        )
        share = (
            '<div class="sharedaddy"><h3>Share this:</h3>'
            f'<a href="{path}?share=email">Email</a> '
            f'<a href="{path}?utm_source=facebook&amp;utm_medium=social&amp;fbclid='
            f'{self._token(20)}">Facebook</a> <a href="{path}?print=1">Print</a> '
            f'<a href="{path}?amp=1">Mobile version</a></div>'
        )
        related = "".join(
            f'<li><a href="{q["path"]}?relatedposts_hit=1&amp;relatedposts_origin={p["id"]}'
            f'&amp;relatedposts_position={n}">{q["title"]}</a></li>'
            for n, q in enumerate(self.related[p["id"]])
        )
        post_nav = '<nav class="post-navigation">'
        if prev_post:
            post_nav += f'<a href="{short(prev_post)}" rel="prev">&laquo; {prev_post["title"]}</a> '
        if next_post:
            post_nav += f'<a href="{short(next_post)}" rel="next">{next_post["title"]} &raquo;</a>'
        post_nav += "</nav>"
        comments = p["comments"]
        pages = max(1, -(-len(comments) // COMMENTS_PER_PAGE))
        k = cpage or pages  # newest comment page first, as WordPress's default
        shown = comments[(k - 1) * COMMENTS_PER_PAGE : k * COMMENTS_PER_PAGE]
        items = "".join(
            f'<li id="comment-{cid}" class="comment"><p>{text}</p><a class="comment-reply-link" '
            f'href="{path}?replytocom={cid}#respond">Reply</a></li>'
            for cid, text in shown
        )
        cnav = ""
        if k > 1:
            cnav += f'<a href="{path}comment-page-{k - 1}/#comments">Older comments</a> '
        if k < pages:
            cnav += f'<a href="{path}comment-page-{k + 1}/#comments">Newer comments</a>'
        reply_form = (
            f'<div id="respond"><h3>Reply to comment {reply}</h3>'
            if reply
            else '<div id="respond">'
        ) + '<form method="post"><textarea name="comment"></textarea></form></div>'
        comment_html = (
            f'<div id="comments" class="comments-area"><h2>{len(comments)} thoughts</h2>'
            f'<ol class="comment-list">{items}</ol>{cnav}'
            f'<a href="{path}feed/">Comments RSS</a>{reply_form}</div>'
        )
        main = (
            f'<article class="post-{p["id"]} post"><h1 class="entry-title">{p["title"]}</h1>'
            f'{meta}<div class="entry-content">{body}{figure}</div><footer class="entry-footer">'
            f"Tagged {tag_links}{share}</footer></article>"
            f'<div id="jp-relatedposts"><h3>Related</h3><ul>{related}</ul></div>'
            f"{post_nav}{comment_html}"
        )
        if amp or printable:
            return (
                f"<!DOCTYPE html><html><head><title>{p['title']}</title>{head}</head><body>"
                f"{main}</body></html>"
            )
        month = (p["date"].year, p["date"].month)
        return self._template(p["title"], main, path, head=head, month=month)
