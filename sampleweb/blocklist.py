"""A URL blocklist that names some of the sample web's pages, as a user's list would.

Lists like UT1's are kept by people who find spam and adult sites after a crawl, so a filter run
meets pages its crawl fetched while they were not yet listed. `blocklist_entries` gives one for
the served sample web, as entries `common.urlblock.write_lists` writes in the UT1 layout
(`<dir>/<category>/urls`, `<dir>/<category>/domains`):
- `spam`: the URLs of half the keyword-spam pages (`sampleweb.lowquality`: the second and
  fourth of each language's four; a list never names all of them, and the rest are left for the
  classifiers to judge);
- `adult`: a few host names under the reserved `.invalid` top-level domain (a list's other
  entries, which never match the web).
`blocked_urls` is the ground truth: the pages a filter run given the list must drop as
`url_blocked:spam`, and no others.
"""

from __future__ import annotations

from collections.abc import Callable

from sampleweb.model import SampleWeb

CATEGORY = "spam"


def blocked_urls(web: SampleWeb, base_url_for: Callable[[str], str]) -> list[str]:
    """The absolute URLs the list names: every other spam page of each language (in path order),
    under `base_url_for(site)`."""
    by_lang: dict[str, list] = {}
    for p in web.content_pages():
        if p.labels["page_type"] == "spam":
            by_lang.setdefault(p.labels["lang"], []).append(p)
    return sorted(
        base_url_for(p.site) + p.path
        for pages in by_lang.values()
        for p in sorted(pages, key=lambda p: p.path)[1::2]
    )


def blocklist_entries(
    web: SampleWeb, base_url_for: Callable[[str], str]
) -> dict[str, dict[str, list[str]]]:
    """The list as {category: {"urls" | "domains": entries}}, for `common.urlblock.write_lists`
    (the UT1 layout). A list names a page without its scheme and port (host/path)."""
    urls = [u.split("://", 1)[1] for u in blocked_urls(web, base_url_for)]
    urls = [
        host.split(":", 1)[0] + "/" + path for host, _, path in (u.partition("/") for u in urls)
    ]
    adult = [f"adult-{i:03d}.listed.invalid" for i in range(5)]
    return {CATEGORY: {"urls": urls}, "adult": {"domains": adult}}
