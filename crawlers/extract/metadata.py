"""The page's title, author, date and site name, as trafilatura's metadata extraction finds them.

`page_metadata` follows `trafilatura.metadata.extract_metadata` step for step for the fields a
document keeps (same values), and leaves out what no column holds: categories, tags and the
license link search (a third of the metadata time on real pages).
"""

from __future__ import annotations

from courlan import extract_domain
from lxml.etree import XPath
from trafilatura.metadata import (
    META_URL,
    examine_meta,
    extract_author,
    extract_meta_json,
    extract_sitename,
    extract_title,
    extract_url,
)
from trafilatura.settings import Document, set_date_params

# What any of trafilatura's AUTHOR_XPATHS needs to match (a superset, without its regular
# expressions, which lxml evaluates in Python on every element): an element with one of these
# names or attributes. Their tests read only an element's own name and attributes (and a child
# <rel>'s text), and extract_author only removes elements before them, so a page without any of
# these has no author to find, and its copy and pruning can be skipped.
_CLASS_PARTS = (
    "uthor",
    "channel-name",
    "zuozhe",
    "bianji",
    "xiaobian",
    "submitted-by",
    "posted-by",
    "journalist-name",
    "screenname",
    "writer",
    "yline",
)
_ID_PARTS = ("uthor", "zuozhe", "bianji", "xiaobian")
_MAY_HAVE_AUTHOR = XPath(
    "boolean(//author | //rel | //*[@rel='author' or @data-testid='AuthorCard' or "
    "@data-testid='AuthorURL' or contains(@itemprop, 'author') or "
    "contains(@data-component, 'Byline') or @class='username' or @class='byl' or @class='BBL' or "
    + " or ".join(f"contains(@id, '{x}')" for x in _ID_PARTS)
    + " or "
    + " or ".join(f"contains(@class, '{x}')" for x in _CLASS_PARTS)
    + "])"
)


def page_metadata(tree, url: str | None) -> Document:
    """Title, author, date and sitename of a parsed page (trafilatura's values); the tree is
    left as it was."""
    from htmldate import find_date

    metadata = examine_meta(tree)
    if metadata.author and " " not in metadata.author:
        metadata.author = None
    try:
        metadata = extract_meta_json(tree, metadata)
    except Exception:  # as trafilatura: a bug in its JSON-LD reader costs the JSON-LD fields only
        pass
    if not metadata.title:
        metadata.title = extract_title(tree)
    if not metadata.author and _MAY_HAVE_AUTHOR(tree):
        metadata.author = extract_author(tree)
    if not metadata.url:
        metadata.url = extract_url(tree, url)
    if metadata.url:
        metadata.hostname = extract_domain(metadata.url, fast=True)
    # Dates from the page's markup (meta, JSON-LD, <time>, URL), not htmldate's extensive search
    # of the free text: that search took 3/4 of the extraction time on real pages.
    date_config = {**set_date_params(extensive=False), "url": metadata.url}
    metadata.date = find_date(tree, **date_config)
    if not metadata.sitename:
        metadata.sitename = extract_sitename(tree)
    if metadata.sitename:
        metadata.sitename = metadata.sitename.lstrip("@")
        if (
            metadata.sitename
            and "." not in metadata.sitename
            and not metadata.sitename[0].isupper()
        ):
            metadata.sitename = metadata.sitename.title()
    elif metadata.url:
        match = META_URL.match(metadata.url)
        if match:
            metadata.sitename = match[1]
    metadata.filedate = date_config.get("max_date")
    metadata.clean_and_trim()
    return metadata
