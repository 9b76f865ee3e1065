"""Per-site structure: robots.txt, home page, about/contact/privacy, sitemaps, redirects and traps."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from .markup import document, link
from .model import site_link
from .sites import SITE_SPECS

if TYPE_CHECKING:
    from .builder import Builder

TEXT = "text/plain; charset=utf-8"
XML = "application/xml; charset=utf-8"
CALENDAR_ENTRY = "/calendar/2026/11"
CALENDAR_SITE = "news-en"
# (site, path, status, target) — chains, a cross-site hop and a loop.
REDIRECTS = (
    ("news-en", "/go/start", 302, "/go/next"),
    ("news-en", "/go/next", 301, "FIRST_ARTICLE"),
    ("news-en", "/moved/wiki", 301, site_link("wiki-en", "/")),
    ("forum-en", "/loop/a", 302, "/loop/b"),
    ("forum-en", "/loop/b", 302, "/loop/a"),
    ("shop-en", "/old-shop/index.html", 301, "/"),
)


def _sitemap(urls: list[str]) -> bytes:
    entries = "".join(f"<url><loc>{escape(u)}</loc></url>" for u in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"{entries}</urlset>\n"
    ).encode()


def _sitemap_index(urls: list[str]) -> bytes:
    entries = "".join(f"<sitemap><loc>{escape(u)}</loc></sitemap>" for u in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"{entries}</sitemapindex>\n"
    ).encode()


def add_site_structure(b: Builder) -> None:
    """Add the non-content pages every site needs; call after all content pages exist."""
    content = {
        s.name: [p for (site, _), p in b.pages.items() if site == s.name and p.labels["is_content"]]
        for s in b.sites
    }
    first_article = next(p.path for p in content["news-en"] if p.path.startswith("/articles/"))
    for site, path, status, target in REDIRECTS:
        target = first_article if target == "FIRST_ARTICLE" else target
        b.add(
            site,
            path,
            b"",
            status=status,
            headers={"Location": target},
            page_type="redirect",
            redirect_to=target,
        )
    b.add(
        "forum-en",
        "/files/report.pdf",
        b"%PDF-1.4\n% sample web placeholder document\n%%EOF\n",
        content_type="application/pdf",
        page_type="file",
    )
    for name, langs, _kind, _variant, sitemap in SITE_SPECS:
        site = b.site(name)
        lang = langs[0] if len(langs) == 1 else "en"
        robots = b.robots[name]
        b.add(
            name,
            "/robots.txt",
            robots.text.encode(),
            status=robots.status,
            content_type=TEXT,
            # The portal's outage is announced as lasting a day: a crawler gives up on it at once
            # instead of re-checking for its whole robots_give_up_s.
            headers={"Retry-After": "86400"} if robots.status == 503 else None,
            page_type="robots",
        )
        pages = content[name]
        items = []
        for p in pages:
            # Members-only links carry rel=nofollow, as sites mark links they do not vouch for.
            rel = "nofollow" if "/members/" in p.path else None
            items.append(f"<li>{link(p.path, p.labels['title'] or p.path, rel)}</li>")
        for r_site, r_path, _, _ in REDIRECTS:
            if r_site == name and r_path != "/loop/b" and r_path != "/go/next":
                items.append(f"<li>{link(r_path, r_path)}</li>")
        if name == CALENDAR_SITE:
            items.append(f"<li>{link(CALENDAR_ENTRY, 'Events calendar')}</li>")
        if name == "forum-en":
            items.append(f"<li>{link('/files/report.pdf', 'Annual report (PDF)')}</li>")
        main = f"<h1>{escape(name)}</h1><p>{escape(site.description)}</p><ul>{''.join(items)}</ul>"
        b.add(name, "/", document(site, lang, name, main), page_type="home", lang=lang, title=name)
        for extra in ("about", "contact", "privacy"):
            text = f"{name}: {site.description}. ({extra})"
            b.add(
                name,
                f"/{extra}.html",
                document(site, lang, extra, f"<h1>{extra}</h1><p>{escape(text)}</p>"),
                page_type=extra,
                lang=lang,
                title=extra,
            )
        if sitemap:
            urls = [site_link(name, "/")] + [site_link(name, p.path) for p in pages]
            if sitemap == "/sitemap_index.xml":
                articles = [u for u in urls if "/articles/" in u or "/premium/" in u]
                others = [u for u in urls if u not in articles]
                b.add(
                    name,
                    "/sitemap-articles.xml",
                    _sitemap(articles),
                    content_type=XML,
                    page_type="sitemap",
                )
                b.add(
                    name,
                    "/sitemap-other.xml",
                    _sitemap(others),
                    content_type=XML,
                    page_type="sitemap",
                )
                index = [
                    site_link(name, "/sitemap-articles.xml"),
                    site_link(name, "/sitemap-other.xml"),
                ]
                b.add(name, sitemap, _sitemap_index(index), content_type=XML, page_type="sitemap")
            else:
                b.add(name, sitemap, _sitemap(urls), content_type=XML, page_type="sitemap")


def calendar_page(site_name: str, year: int, month: int) -> bytes:
    """The infinite-calendar trap: every month links to the previous and the next one, forever."""
    prev_y, prev_m = (year, month - 1) if month > 1 else (year - 1, 12)
    next_y, next_m = (year, month + 1) if month < 12 else (year + 1, 1)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Events {year}-{month:02d}</title></head>'
        f"<body><h1>Events in {year}-{month:02d}</h1><p>No events this month.</p>"
        f'<a href="/calendar/{prev_y}/{prev_m}">previous month</a> '
        f'<a href="/calendar/{next_y}/{next_m}">next month</a></body></html>\n'
    ).encode()
