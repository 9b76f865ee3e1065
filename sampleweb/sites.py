"""The sites of the sample web and where each language's documents live."""

from __future__ import annotations

from .content import LANGS
from .model import Site

# name, languages, kind, robots variant, sitemap path announced in robots.txt
SITE_SPECS: tuple[tuple[str, tuple[str, ...], str, str, str | None], ...] = (
    ("news-en", ("en",), "news", "news", "/sitemap_index.xml"),
    ("forum-en", ("en",), "forum", "wildcards", "/sitemap.xml"),
    ("shop-en", ("en",), "shop", "token-groups", "/sitemap.xml"),
    ("wiki-en", ("en",), "wiki", "standard", "/sitemap.xml"),
    ("gallery-en", ("en",), "gallery", "gallery", "/sitemap.xml"),
    ("apps-en", ("en",), "apps", "standard", None),
    ("magazin-de", ("de",), "news", "no-training", "/sitemap.xml"),
    ("kochen-de", ("de",), "recipes", "standard", "/sitemap.xml"),
    ("journal-fr", ("fr",), "news", "standard", "/sitemap.xml"),
    ("forum-fr", ("fr",), "forum", "standard", "/sitemap.xml"),
    ("noticias-es", ("es",), "news", "standard", "/sitemap.xml"),
    ("recetas-es", ("es",), "recipes", "standard", "/sitemap.xml"),
    ("blog-ja", ("ja",), "blog", "standard", "/sitemap.xml"),
    ("wiki-ja", ("ja",), "wiki", "standard", "/sitemap.xml"),
    ("news-zh", ("zh",), "news", "standard", "/sitemap.xml"),
    ("forum-zh", ("zh",), "forum", "standard", "/sitemap.xml"),
    ("mirror-multi", LANGS, "syndication", "missing", None),
    ("portal-multi", LANGS, "portal", "unavailable", None),
)

DESCRIPTIONS = {
    "news": "daily news and features",
    "forum": "community discussion board",
    "shop": "online shop with product pages",
    "wiki": "reference guides",
    "gallery": "picture galleries",
    "apps": "JavaScript-rendered articles",
    "recipes": "recipes and kitchen talk",
    "blog": "personal blog",
    "syndication": "syndicated copies of other sites' articles (robots.txt answers 404)",
    "portal": "multilingual portal (robots.txt answers 503)",
}

# Which site hosts a language's documents of each kind.
LANG_SITES: dict[str, dict[str, str]] = {
    "en": {
        "article": "news-en",
        "recipe": "news-en",
        "forum": "forum-en",
        "product": "shop-en",
        "reference": "wiki-en",
    },
    "de": {
        "article": "magazin-de",
        "reference": "magazin-de",
        "recipe": "kochen-de",
        "forum": "kochen-de",
        "product": "kochen-de",
    },
    "fr": {
        "article": "journal-fr",
        "reference": "journal-fr",
        "recipe": "journal-fr",
        "forum": "forum-fr",
        "product": "forum-fr",
    },
    "es": {
        "article": "noticias-es",
        "reference": "noticias-es",
        "recipe": "recetas-es",
        "forum": "recetas-es",
        "product": "recetas-es",
    },
    "ja": {
        "article": "blog-ja",
        "recipe": "blog-ja",
        "forum": "blog-ja",
        "product": "blog-ja",
        "reference": "wiki-ja",
    },
    "zh": {
        "article": "news-zh",
        "reference": "news-zh",
        "recipe": "news-zh",
        "forum": "forum-zh",
        "product": "forum-zh",
    },
}
LOWQ_SITE = {
    "en": "forum-en",
    "de": "kochen-de",
    "fr": "forum-fr",
    "es": "recetas-es",
    "ja": "blog-ja",
    "zh": "forum-zh",
}
SECTIONS = {
    "article": "/articles/",
    "reference": "/guides/",
    "recipe": "/recipes/",
    "forum": "/forum/",
    "product": "/products/",
}

# Robots-relevant sections: the last regular pages of a site move here (see robots.py's rules).
SPECIAL_SECTIONS = {
    "news-en": ("/premium/", "/premium/", "/private/"),
    "forum-en": ("/members/", "/members/public/", "?sessionid", ".pdf.html"),
    "shop-en": ("/cart/", "/reviews/"),
    "wiki-en": ("/tmp/",),
    "magazin-de": ("/intern/",),
}
# (site, n-th regular page) -> (meta robots directives, X-Robots-Tag value)
ROBOTS_FLAGS = {
    ("news-en", 0): (["noindex"], None),
    ("news-en", 1): (["nofollow"], None),
    ("wiki-en", 0): (["noindex", "nofollow"], None),
    ("journal-fr", 0): (["noai"], None),
    ("journal-fr", 1): (["noai", "noimageai"], None),
    ("noticias-es", 0): ([], "noai"),
    ("noticias-es", 1): ([], "noindex"),
    ("blog-ja", 0): (["noai"], None),
    ("news-zh", 0): ([], "noindex, nofollow"),
}
# JS mechanism pages outside apps-en: (language, mechanism)
JS_ELSEWHERE = (
    ("de", "load_more"),
    ("fr", "react_shell"),
    ("es", "tabs"),
    ("ja", "fetch_json"),
    ("zh", "infinite_scroll"),
)
GZIP_SITES = ("wiki-en", "blog-ja")


def make_sites() -> list[Site]:
    """The site list, in index order (site i binds 127.0.0.(first_octet + i))."""
    return [
        Site(
            name,
            i,
            list(langs),
            kind,
            robots,
            DESCRIPTIONS[kind],
            0.5 if robots == "token-groups" else None,
        )
        for i, (name, langs, kind, robots, _) in enumerate(SITE_SPECS)
    ]
