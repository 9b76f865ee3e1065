"""A German paper whose articles are known only by their titles in the address, with umlauts,
percent-encoded (tests/crawl/umlautnews.py), crawled on a budget of 1.3 pages an article: the
crawler must spend it on articles, not on the Schlagwort, Autor and Kategorie listings, which
outnumber them. With a URL-shape signal that reads only ASCII slugs and English listing names,
the articles and the listings looked alike and 0.64 of the articles were fetched."""

from __future__ import annotations

from .realnews import crawl_news
from .umlautnews import UmlautNewsServer


def test_a_budget_goes_to_articles_whose_slugs_are_not_ascii(tmp_path):
    n = 300
    result = crawl_news(
        tmp_path / "out",
        n,
        seed=0,
        ip="127.0.0.68",
        server=UmlautNewsServer,
        max_pages=int(1.3 * n),
    )
    print("\n", result)
    assert result["coverage"] >= 0.9, result
    assert result["families"].get("article", 0) >= 0.7 * result["requests"], result
