"""The page's tree made ready for trafilatura: forum and wiki chrome removed, posts made paragraphs.

Normalisations of the parsed HTML before main-content extraction, all in place:

* `prune_chrome` removes elements whose class or id is a widely used boilerplate marker of forum
  and wiki software (phpBB, vBulletin, SMF, MyBB, XenForo signatures and poster profiles;
  MediaWiki edit-section links, tables of contents, jump links, `noprint` and navigation boxes).
  trafilatura keeps them otherwise: a signature or a "Contents" box looks like a paragraph.
* `unmark_repeated_frames` takes a content-frame class (`content`, `post`, `entry`) from
  elements that repeat it side by side: trafilatura takes the first element of such a class for
  the page's main content, which on a forum (phpBB's `div.content`) is the first post alone.
* `wrap_loose_text` puts each run of loose text beside block elements (a forum reply written
  after its `</blockquote>` right inside the post's div, with its <br>s) into a block of its
  own, and the text of each repeated frame into paragraphs: trafilatura keeps the blocks of such
  a container and drops the text beside them, so every reply that quotes would lose its words.
"""

from __future__ import annotations

from lxml.etree import XPath, strip_elements

# Class tokens (whole tokens, as CSS `.name` matches them) of boilerplate blocks.
CHROME_CLASSES = frozenset(
    {
        "signature",  # phpBB, SMF, MyBB, vBulletin 3 (blocks only: see _is_chrome)
        "signaturecontainer",  # vBulletin 4
        "message-signature",  # XenForo 2
        "post-signature",
        "postprofile",  # phpBB: the poster's name, rank, post count, join date
        "mw-editsection",  # MediaWiki: "[edit]" after each heading
        "toc",  # MediaWiki and many generators: the "Contents" box
        "mw-jump-link",  # MediaWiki: "Jump to navigation"
        "noprint",  # MediaWiki: what the site itself leaves out of the article when printed
        "navbox",  # MediaWiki: the boxes of related links under an article
        "vertical-navbox",
    }
)
CHROME_IDS = frozenset({"toc", "jump-to-nav", "siteSub"})
# A "signature" that is inline or holds code is an API signature (documentation), not a poster's.
_SIGNATURE_TAGS = {"div", "aside", "blockquote", "dl", "section"}
_CODE_TAGS = ("code", "pre", "kbd", "samp")

# What to test in Python: elements whose class or id contains a marker, read as attribute values.
_MARKERS = (
    "signature",
    "postprofile",
    "toc",
    "mw-editsection",
    "mw-jump-link",
    "noprint",
    "navbox",
)
_CANDIDATES = XPath(
    " | ".join(
        [f"//@class[contains(., '{c}')]/.." for c in _MARKERS]
        + [f"//@id[. = '{i}']/.." for i in sorted(CHROME_IDS)]
    )
)

# A tag no parsed HTML has (the HTML parser never makes a namespaced one): what is to go.
_PRUNED = "{urn:refinery}chrome"


def _is_chrome(el) -> bool:
    if not isinstance(el.tag, str) or el.tag in ("html", "body"):
        return False
    if (el.get("id") or "").strip() in CHROME_IDS:
        return True
    classes = set((el.get("class") or "").split()) & CHROME_CLASSES
    if classes == {"signature"}:
        return el.tag in _SIGNATURE_TAGS and next(el.iter(*_CODE_TAGS), None) is None
    return bool(classes)


def prune_chrome(tree) -> int:
    """Remove from `tree` (in place) the boilerplate blocks `CHROME_CLASSES` and `CHROME_IDS`
    name, their tails kept; how many were removed (nested ones included)."""
    pruned = [el for el in _CANDIDATES(tree) if _is_chrome(el)]
    if not pruned:
        return 0
    for el in pruned:
        el.tag = _PRUNED
    strip_elements(tree, _PRUNED, with_tail=False)
    return len(pruned)


# Elements that start a block of their own: loose text beside one of them is a paragraph.
BLOCK_TAGS = frozenset(
    "address article aside blockquote center details dialog dir div dl fieldset figure footer "
    "form h1 h2 h3 h4 h5 h6 header hr main menu nav ol p pre section table ul".split()
)
# Containers whose loose text is wrapped: not list items, cells or terms (trafilatura reads
# those as units), nor <body> (a page of loose text is trafilatura's own baseline case).
CONTAINER_TAGS = frozenset({"div", "section", "article", "main", "blockquote", "center"})


def _has_words(text: str | None) -> bool:
    return bool(text) and any(c.isalnum() for c in text)


def _runs(container) -> list[tuple[object, list]]:
    """The container's inline content between its blocks, in order: each run as (the block
    whose tail starts it, None where the container's own text does; its elements), only runs
    with loose words (link texts alone are a menu, not a paragraph). A run keeps its <br>s:
    split at them, lines of links (a post's footnotes) would be dropped as link lists."""
    runs: list[tuple[object, list]] = []
    anchor, members, words = None, [], _has_words(container.text)
    for child in container:
        if isinstance(child.tag, str) and child.tag in BLOCK_TAGS:
            if words:
                runs.append((anchor, members))
            anchor, members, words = child, [], _has_words(child.tail)
        else:
            members.append(child)
            words = words or _has_words(child.tail)
    if words:
        runs.append((anchor, members))
    return runs


def _wrap(container, anchor, members: list, tag: str) -> None:
    p = container.makeelement(tag, {})
    if anchor is None:
        p.text, container.text = container.text, None
        container.insert(0, p)
    else:
        p.text, anchor.tail = anchor.tail, None
        anchor.addnext(p)
    for el in members:
        p.append(el)  # moves it, its tail with it


def wrap_loose_text(tree) -> int:
    """Wrap (in place) each run of loose text beside block elements of a div-like container into
    a <p>; how many paragraphs were made. A container of inline content only is left alone."""
    made = 0
    for container in list(tree.iter(*CONTAINER_TAGS)):
        # A post's frame (`unmark_repeated_frames`) holds paragraphs, however it writes them.
        frame = container.get("class") == REPEATED_CLASS
        if not frame and not any(isinstance(c.tag, str) and c.tag in BLOCK_TAGS for c in container):
            continue
        # A paragraph among paragraphs, else a block like a div of text alone: trafilatura reads
        # div text only on pages with little paragraph text, so a <p> here would make the posts
        # that quote (wrapped) main content and drop the posts that do not (text-only divs).
        tag = "p" if frame or container.find("p") is not None else "div"
        for anchor, members in _runs(container):
            _wrap(container, anchor, members, tag)
            made += 1
    return made


# Classes trafilatura takes the first element of as the page's main content frame
# (trafilatura.xpaths.BODY_XPATH: `@class='post'`, `'entry'`, `'content'`).
FRAME_CLASSES = ("content", "post", "entry")
_FRAMES = XPath(
    "//*[self::article or self::div or self::main or self::section]["
    + " or ".join(f"@class='{c}'" for c in FRAME_CLASSES)
    + "]"
)
REPEATED_CLASS = "refinery-repeated"


def unmark_repeated_frames(tree) -> int:
    """Rename (in place) the class of elements that share one of `FRAME_CLASSES` with others
    beside them (none inside another): on a forum each post is a `div.content` (phpBB), and
    trafilatura would take the first post for the whole page. Without the class it finds the
    posts' common frame as on any page; how many elements were renamed."""
    groups: dict[str, list] = {}
    for el in _FRAMES(tree):
        groups.setdefault(el.get("class"), []).append(el)
    renamed = 0
    for els in groups.values():
        members = set(els)
        if len(els) < 2 or any(a in members for el in els for a in el.iterancestors()):
            continue
        for el in els:
            el.set("class", REPEATED_CLASS)
        renamed += len(els)
    return renamed


def prepare_tree(tree) -> None:
    """The normalisations in order: chrome first (a signature's text is no paragraph to wrap),
    then repeated frames and loose text."""
    prune_chrome(tree)
    unmark_repeated_frames(tree)
    wrap_loose_text(tree)
