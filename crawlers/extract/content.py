"""Main content with trafilatura: plain text, Markdown, metadata and the interleaved text/image form.

Two trafilatura runs. The first, with trafilatura's default choices (images, formatting and
comments off, tables on), decides the main content: `text` is what plain `trafilatura.extract`
returns for the page, less the space trafilatura leaves after each table row's closing "|"
(no retry in another mode: a precision retry of short pages gained 0.018 F1
on the sample web but lost on real pages, where it picks another block as often as it drops
chrome). Keeping images changes trafilatura's decisions (it
then keeps captions, photo credits and image-led teasers: on trafilatura's own evaluation set
that cost 0.01 F1 of precision), so images come from a second, fast run and are only placed
into the first run's content: next to the same text block they sit beside there, inline when
their block is in the main content, dropped when their neighbours are not. `markdown` and the
interleaved blocks are the first run's content with those images in place.
Reader comments are not main content: they are kept apart in `comments` (trafilatura's comment
sections, without lines already in the main text), never in `text`, `markdown` or the blocks.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

from lxml.etree import Element, SubElement, XPath, strip_elements
from trafilatura.core import normalize_unicode, xmltotxt
from trafilatura.htmlprocessing import convert_tags, tree_cleaning
from trafilatura.main_extractor import extract_comments
from trafilatura.settings import Extractor
from trafilatura.utils import is_image_file, load_html

from crawlers.extract.decode import clean_text
from crawlers.extract.img_sources import (
    absolute_image_sources,
    http_url,
    image_url,
    is_stand_in,
    resolve_lazy_images,
    unmark_image,
)
from crawlers.extract.math_tex import formulas_as_tex
from crawlers.extract.md_tables import body_markdown
from crawlers.extract.metadata import page_metadata
from crawlers.extract.runs import RawTree, main_run, sequence
from crawlers.extract.tables import flatten_nested_tables, ignore_oversized_spans
from crawlers.render.decide import UNHIDDEN_PANEL_CLASSES, UNHIDDEN_PANEL_ROLES

# What trafilatura's comment XPaths (trafilatura.xpaths.COMMENTS_XPATH) need, on the raw tree:
# its id/class tests on every tag that cleaning and tag conversion turn into a div, section or
# list. Cleaning only removes elements and renames tags, so no match here means no comments.
# The tests run on the attribute nodes, the tag is checked after: testing every element (or
# lxml's regular expressions, a call into Python per element) costs three to ten times as much.
_COMMENT_TAGS = {"div", "section", "ul", "ol", "dl", "form", "figure", "table", "details"}
_COMMENT_ATTRS = XPath(
    "//@class[contains(., 'comment') or starts-with(., 'Comments')]/.. | "
    "//@id[contains(., 'commentlist') or contains(., 'comment-list') or "
    "starts-with(., 'comments') or starts-with(., 'comment-') or starts-with(., 'social') or "
    "starts-with(., 'comol') or starts-with(., 'disqus_thread') or "
    "starts-with(., 'dsq-comments')]/.."
)


def _may_have_comments(tree) -> bool:
    """Whether a div, section, list, form, figure, table or details has a class containing
    'comment' or starting with 'Comments', or an id starting with 'social', matching
    'comment-?list', '^comment[s-]' or '^(?:comol|disqus_thread|dsq-comments)'."""
    return any(el.tag in _COMMENT_TAGS for el in _COMMENT_ATTRS(tree))


# trafilatura's plain text ends each table row "| " (`| Ochre star | 14 | 9 | `).
_ROW_END = re.compile(r"\| +$", re.MULTILINE)
# A code fence of our Markdown (trafilatura writes ``` around a <pre>; ~~~ is CommonMark's other),
# maybe after a list item's marker; and a list item's line as trafilatura writes it: two spaces
# per nesting level, then "- " or "N. ".
_FENCE = re.compile(r"(?:(?:[-*+]|\d{1,9}[.)]) +)?(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"( *)([-*+]|\d{1,9}[.)]) ")
SHORT_PAGE_CHARS = 600  # main text below this may be trafilatura's baseline fallback
_MIN_COMMENT_LABEL = 50  # a single comment line shorter than this is the section's label
_TEXT_TAGS = {"p", "head", "list", "quote", "code", "table", "item"}
_SURROUND_CHARS = 300  # text kept on each side of an image, enough for a caption-like context
# Plain-ASCII marker: trafilatura's sanitiser strips control and private-use characters.
_MARK = "@@refinery-image@@"


@dataclass
class Content:
    """What trafilatura found in one page."""

    text: str
    markdown: str
    title: str | None
    author: str | None
    date: str | None
    sitename: str | None
    canonical_url: str | None
    lang_hint: str | None
    blocks: list[dict] = field(default_factory=list)
    comments: str = ""


def _meta(tree, xpath: str) -> str | None:
    hits = tree.xpath(xpath)
    for hit in hits:
        value = (hit if isinstance(hit, str) else hit.text_content()).strip()
        if value:
            return value
    return None


def page_lang_hint(tree) -> str | None:
    """Language the page declares (<html lang>, Content-Language, og:locale), normalised to a base code."""
    raw = _meta(
        tree,
        "/html/@lang | //meta[translate(@http-equiv,'CONTENT-LANGUAGE','content-language')"
        "='content-language']/@content | //meta[@property='og:locale']/@content",
    )
    if not raw:
        return None
    return raw.replace("_", "-").split("-")[0].split(",")[0].strip().lower() or None


# The first <base href> in document order (one inside a <template> is inert).
_BASE_HREF = XPath("(//base[@href][not(ancestor::template)])[1]/@href", smart_strings=False)


def document_base(tree, url: str) -> str:
    """The URL relative links of the page resolve against: its first <base href>, itself
    resolved against the page URL, when that is an http(s) URL; else the page URL."""
    hrefs = _BASE_HREF(tree)
    base = http_url(url, hrefs[0]) if hrefs else None
    return base or url


def canonical_url(tree, base_url: str) -> str | None:
    """Absolute <link rel=canonical> of the page (against `base_url`: `document_base`), if it
    declares an http(s) one."""
    href = _meta(
        tree, "//link[contains(concat(' ', normalize-space(@rel), ' '), ' canonical ')]/@href"
    )
    return http_url(base_url, href) if href else None


def _block_text(el) -> str:
    # xmltotxt leaves the tree as it is when it does not format (it copies when it does).
    return " ".join(xmltotxt(el, include_formatting=False).split())


def _without_images(el):
    el = copy.deepcopy(el)
    for g in el.findall(".//graphic"):
        _replace_with_text(g, "")
    return el


def _replace_with_text(el, text: str) -> None:
    # Removing an lxml element drops its tail; move text + tail into the previous sibling or parent.
    insert = text + (el.tail or "")
    prev, parent = el.getprevious(), el.getparent()
    if prev is not None:
        prev.tail = (prev.tail or "") + insert
    else:
        parent.text = (parent.text or "") + insert
    parent.remove(el)


def drop_sourceless_images(body, base_url: str) -> int:
    """Remove from `body` (in place) each image with no source a browser loads (missing, blank
    or no http(s) URL: trafilatura keeps an <img> whose source it dropped as a bare graphic,
    which Markdown would write as `![]()`), and make the others' sources absolute against
    `base_url`; how many were removed."""
    removed = 0
    for g in list(body.iter("graphic")):
        src = image_url(base_url, g.get("src"))
        if src is None:
            _replace_with_text(g, "")
            removed += 1
        elif src != g.get("src"):
            g.set("src", src)
    return removed


def _split_at_images(el, base_url: str) -> list[dict]:
    el = copy.deepcopy(el)
    images = el.findall(".//graphic")
    for i, g in enumerate(images):
        _replace_with_text(g, f" {_MARK}{i}{_MARK} ")
    parts: list[dict] = []
    for j, chunk in enumerate(_block_text(el).split(_MARK)):
        if j % 2 == 0:
            parts.append({"kind": "text", "text": chunk.strip(), "src": None, "alt": None})
        else:
            g = images[int(chunk)]
            src = image_url(base_url, g.get("src"))
            if src:
                parts.append({"kind": "image", "text": None, "src": src, "alt": g.get("alt") or ""})
    return parts


def interleave(body, base_url: str) -> list[dict]:
    """Walk trafilatura's body in order: text blocks and image references (src made absolute
    against `base_url`; an image whose src is missing, blank or no http(s) URL is left out)."""
    blocks: list[dict] = []

    def visit(el) -> None:
        if el.tag == "graphic":
            src = image_url(base_url, el.get("src"))
            if src:
                blocks.append(
                    {"kind": "image", "text": None, "src": src, "alt": el.get("alt") or ""}
                )
            return
        images = el.findall(".//graphic")
        if el.tag in _TEXT_TAGS and not images:
            text = _block_text(el)
            if text:
                blocks.append({"kind": "text", "text": text, "src": None, "alt": None})
            return
        if el.tag in _TEXT_TAGS:
            # A block holding images: split its text at each image so order is kept.
            for part in _split_at_images(el, base_url):
                if part["kind"] == "image" or part["text"]:
                    blocks.append(part)
            return
        for child in el:
            visit(child)

    if body is not None:
        for child in body:
            visit(child)
    return blocks


def image_refs(blocks: list[dict]) -> list[dict]:
    """Image references with the nearest text before and after them (caption-like context)."""
    # The nearest text block on each side of every block: one pass forward, one backward.
    before, after = [""] * len(blocks), [""] * len(blocks)
    last = ""
    for i, block in enumerate(blocks):
        before[i] = last
        if block["kind"] == "text":
            last = block["text"]
    last = ""
    for i in range(len(blocks) - 1, -1, -1):
        after[i] = last
        if blocks[i]["kind"] == "text":
            last = blocks[i]["text"]
    refs = []
    for i, block in enumerate(blocks):
        if block["kind"] != "image":
            continue
        surrounding = (before[i][-_SURROUND_CHARS:] + " " + after[i][:_SURROUND_CHARS]).strip()
        refs.append(
            {
                "position": i,
                "src": block["src"],
                "alt": block["alt"],
                "surrounding_text": surrounding,
            }
        )
    return refs


def _options(url: str, favor: str, *, images: bool, fast: bool) -> Extractor:
    return Extractor(
        output_format="python",
        fast=fast,
        precision=favor == "precision",
        recall=favor == "recall",
        comments=False,
        # Formatting (bold, italics) changes what trafilatura keeps (captions, teasers): only
        # the image run, whose text is not used, keeps it.
        formatting=images,
        images=images,
        tables=True,
        url=url,
    )


def _run_trafilatura(raw: RawTree, url: str, favor: str):
    """trafilatura's main content of the page, as `trafilatura.extract` decides it (metadata apart:
    `page_metadata`); the raw tree is left as it was."""
    return main_run(raw, _options(url, favor, images=False, fast=False))


def _image_body(raw: RawTree, url: str, favor: str, *, fast: bool):
    """The body of trafilatura's run with images (bare_extraction's steps without its text
    serialisation, which the image run does not use); None where bare_extraction gives none."""
    options = _options(url, favor, images=True, fast=fast)
    try:
        body, text = sequence(raw, options, url)
    except (TypeError, ValueError):
        return None
    if len(text) < options.min_output_size and 0 < options.min_output_comm_size:
        return None
    return body


# The attributes trafilatura.utils.image_src reads for an <img>'s source: src and data-src*.
_IMG_SOURCES = XPath(
    "//img/@*[name()='src' or starts-with(name(), 'data-src')]", smart_strings=False
)


def _has_images(tree) -> bool:
    # An <img> becomes a graphic of trafilatura's output only with an image file as its source
    # (`image_src` is not None; `resolve_lazy_images` has marked every other image URL as one);
    # read as attribute values, without an element object per <img>.
    return any(is_image_file(src) for src in _IMG_SOURCES(tree))


def _plain(doc, tree=None) -> str:
    if doc is None:
        return ""
    if doc.body is None or not len(doc.body):
        # A page of a few words: trafilatura's baseline keeps them as text without a body; kept
        # when they are outside navigation, header, footer and asides (a menu is no document).
        text = " ".join((doc.text or "").split())
        if not text or tree is None:
            return ""
        rest = copy.deepcopy(tree)
        for el in rest.xpath("//nav|//header|//footer|//aside|//script|//style"):
            el.drop_tree()
        return text if text in " ".join(rest.text_content().split()) else ""
    if doc.body.find(".//graphic") is None:  # bare_extraction's text is that of its body
        return (doc.text or "").strip()
    return xmltotxt(_without_images(doc.body), include_formatting=False).strip()


# Blocks matched between the two runs: the text blocks, and a table's rows and cells.
_PLACE_TAGS = _TEXT_TAGS | {"row", "cell"}
_INSIDE = {"item", "cell"}  # an image next to one goes into it (a list or a table holds no image)
_MIN_INSIDE = 40  # a main block found inside longer text of the image run has this many chars


def _has_words(text: str) -> bool:
    """Whether a block's text has more than list and table marks (`- `, `| |`)."""
    return any(c.isalnum() for c in text)


def _parts(el) -> list:
    """The parts of a block in order: runs of its own text (str), its images and the blocks
    inside it (an item's nested list, a row's cells), each (but text) as the element of `el`."""
    found: list = []
    copied: list = []

    def collect(original, copy_) -> None:
        for child, child_copy in zip(original, copy_, strict=True):
            if child.tag == "graphic" or child.tag in _PLACE_TAGS:
                found.append(child)
                copied.append(child_copy)
            else:
                collect(child, child_copy)

    clone = copy.deepcopy(el)
    collect(el, clone)
    for i, x in enumerate(copied):
        _replace_with_text(x, f" {_MARK}{i}{_MARK} ")
    parts: list = []
    for j, chunk in enumerate(_block_text(clone).split(_MARK)):
        parts.append(chunk.strip() if j % 2 == 0 else found[int(chunk)])
    return parts


def _cell_of(row, last: bool):
    """The first or last cell of a table row (a new one where it has none)."""
    cells = row.findall("cell")
    return cells[-1 if last else 0] if cells else SubElement(row, "cell")


# A teaser's block: the nearest element around an image's link that holds text, at most this many
# levels up (a card: the link, its figure or wrapper, the card).
_TEASER_LEVELS = 4
_MIN_EVIDENCE = 12  # a teaser's text piece this long tells its block apart from the main text
_LINKED_IMGS = XPath("//a[@href]//img")


def _words(text: str) -> str:
    return " ".join(text.split())


def _titled(block, href: str) -> bool:
    """Whether a link to `href` in `block` has words: the teaser's title (a photo's caption
    or a gallery's text links elsewhere, or nowhere)."""
    return any(
        (a.get("href") or "").strip() == href and any(c.isalnum() for c in a.text_content())
        for a in block.iter("a")
    )


def teaser_sources(tree, main_text: str) -> set[str]:
    """The sources (each attribute trafilatura reads one from) of the page's teaser thumbnails:
    images inside a link to a page (not to an image file: a linked photo is the article's)
    whose teaser block, the nearest element around the link holding text, has none of its
    text in `main_text` (a related-stories card, a sidebar's "Today on ..." entries, a
    call to action). trafilatura's image run keeps their images but not their titles, so
    the placer would hang them on the main block before them. An image in a <figure> with a
    caption is kept: the main run drops captions, so its text is never main text."""
    main = _words(main_text)
    found: set[str] = set()
    outside: dict = {}  # teaser block: whether none of its text is main text (a gallery's cards
    # share one)
    for img in _LINKED_IMGS(tree):
        link = next(img.iterancestors("a"))
        href = (link.get("href") or "").strip()
        if not href or href.startswith("#") or is_image_file(href.split("?")[0]):
            continue
        if any(f.find(".//figcaption") is not None for f in img.iterancestors("figure")):
            continue
        block, pieces = link, []
        for _ in range(_TEASER_LEVELS):
            block = block.getparent()
            if block is None:
                break
            pieces = [_words(x) for x in block.itertext() if any(c.isalnum() for c in x)]
            if pieces:
                break
        if not pieces or not _titled(block, href):
            continue
        if block not in outside:
            evidence = [x for x in pieces if len(x) >= _MIN_EVIDENCE] or pieces
            outside[block] = not any(x in main for x in evidence)
        if outside[block]:
            found.update(v for k, v in img.attrib.items() if k == "src" or k.startswith("data-src"))
    return found


def _put_after(anchor, image) -> None:
    """Put `image` right after `anchor` of the main content: at the end of a list item or table
    cell (a row's last cell), after any other element."""
    if anchor.tag == "row":
        anchor = _cell_of(anchor, last=True)
    if anchor.tag in _INSIDE:
        anchor.append(image)
    else:
        anchor.addnext(image)


def _put_before(target, images: list) -> None:
    """Put `images` (in order) right before `target` of the main content: at the start of a list
    item or table cell (a row's first cell), before any other element."""
    if target.tag == "row":
        target = _cell_of(target, last=False)
    if target.tag in _INSIDE:
        images[-1].tail, target.text = target.text, None
        for i, image in enumerate(images):
            target.insert(i, image)
    else:
        for image in images:
            target.addprevious(image)


class _Placer:
    """place_images' walk over the image run: the main blocks by text, and where the next image
    goes (after `anchor`, or, none, before the next main block found)."""

    def __init__(self, out, teasers=frozenset()):
        self.out = out
        self.teasers = teasers  # sources of images not to place (`teaser_sources`)
        self.texts: dict = {}  # block texts of `out`, until a change inside them
        self.index: dict[str, list] = {}
        self.key_of: dict = {}  # each main block's text, as it is before images go in
        for el in out.iter(*_PLACE_TAGS):
            key = self.text_of(el)
            if key:
                self.index.setdefault(key, []).append(el)
                self.key_of[el] = key
        self.anchor = None  # the main element (or image placed) the next image goes after
        self.last = None  # the main block last found
        self.waiting: list = []  # images for before the next main block found
        self.depth = 0  # how many blocks being split hold the element visited

    def text_of(self, el) -> str:
        if el not in self.texts:
            self.texts[el] = _block_text(el)
        return self.texts[el]

    def changed(self, el) -> None:
        """`el` was put into `out`: the texts of the blocks around it are no longer known."""
        for x in (el, *el.iterancestors()):
            self.texts.pop(x, None)

    def visit(self, el) -> None:
        if el.tag == "graphic":
            self.image(el)
        elif el.tag in _PLACE_TAGS:
            self.block(el)
        else:
            for child in el:
                self.visit(child)

    def image(self, graphic) -> None:
        if graphic.get("src") in self.teasers:
            return
        image = copy.deepcopy(graphic)
        image.tail = None
        if self.anchor is None:
            self.waiting.append(image)
        else:
            _put_after(self.anchor, image)
            self.anchor = image
            self.changed(image)

    def take(self, key: str):
        """The first main block of text `key` not yet found and still in `out`; None if none."""
        hits = self.index.get(key)
        while hits:
            el = hits.pop(0)
            # a block inside one replaced by its image-run copy is no longer in `out`
            if el.getroottree().getroot() is self.out:
                return el
        return None

    def block(self, el) -> None:
        has_images = el.find(".//graphic") is not None
        key = _block_text(_without_images(el) if has_images else el)
        if not _has_words(key):
            # images only (WordPress wraps each image in its own <p>; an image row of a table):
            # no text to find in the main content, so its images stand alone, like ones between
            # blocks; a block of no text and no image changes nothing
            for graphic in el.iter("graphic"):
                self.image(graphic)
            return
        target = self.take(key)
        if target is not None:
            self.found(target, el if has_images else None)
        elif not has_images:
            self.follow(key)
        else:
            self.split(el)

    def found(self, target, imaged) -> None:
        """`target`, a main block, is the image run's `imaged` (None: a block without images)."""
        if imaged is not None and target.find(".//graphic") is None:
            inline = copy.deepcopy(imaged)
            inline.tail = target.tail
            target.getparent().replace(target, inline)
            target = inline
            self.changed(target)
        if self.waiting:
            _put_before(target, self.waiting)
            self.changed(target)
        self.anchor = self.last = target
        self.waiting = []

    def follow(self, key: str) -> None:
        """Text of the image run that is no main block of its own."""
        # Inside a bigger main block (trafilatura's baseline keeps a short page as one
        # paragraph): the images after it go after that block, in order.
        holder = next((x for x in self.out.iter(*_TEXT_TAGS) if key in self.text_of(x)), None)
        if holder is not None:
            if holder is not self.last:
                self.anchor = self.last = holder
            return
        # A main block inside it (the image run glues a caption to its paragraph): found.
        inside = next(
            (
                x
                for x, text in self.key_of.items()
                if len(text) >= _MIN_INSIDE and text in key and x in self.index[text]
            ),
            None,
        )
        if inside is not None:
            self.index[self.key_of[inside]].remove(inside)
            self.found(inside, None)
        else:  # not main content: the images after it wait for the next block
            self.anchor = None

    def split(self, el) -> None:
        """A block holding images whose text is no main block's (the image run splits a list or
        a table otherwise, adds an image row, or keeps a caption the main run drops): its parts
        in order (runs of its own text, images, items, rows, cells, nested blocks), each found
        on its own; an image goes after the nearest main text before it in the outermost such
        block, else before the main text after it there. Images of it that find neither are not
        main content (a list of related posts, each an image and a title): dropped."""
        waiting, n = self.waiting, len(self.waiting)
        if self.depth == 0:
            self.anchor = None
        self.depth += 1
        for part in _parts(el):
            if not isinstance(part, str):
                self.visit(part)
            elif _has_words(part):
                target = self.take(part)
                if target is not None:
                    self.found(target, None)
                else:
                    self.follow(part)
        self.depth -= 1
        if self.waiting is waiting:
            del waiting[n:]
        else:
            self.waiting = []


def place_images(body, imaged, teasers=frozenset()):
    """A copy of `body` (the main content) with the images of `imaged` (the same page extracted
    with images) placed where they are there: a text block holding images replaces its equal in
    `body` (images inline); an image between blocks (or alone in a block of its own, as
    WordPress wraps images in <p>) goes after the main block just before it, else
    (it leads, or follows text that is not main content) before the next main block. A list,
    table or block whose text differs between the runs is matched by its parts (items, rows,
    cells, nested blocks), so an image in it goes after the nearest main text before it. Images
    after the last main block are dropped, and so is the caption text trafilatura hangs on
    images, and an image whose source is still a placeholder (`is_stand_in`); sources lose the
    mark `img_sources.mark_image` set. An image whose source is in `teasers` (`teaser_sources`:
    a related-content card's thumbnail) is not placed."""
    out = copy.deepcopy(body)
    if imaged is None or imaged.find(".//graphic") is None:
        return out
    placer = _Placer(out, teasers)
    for child in imaged:
        placer.visit(child)
    for graphic in list(out.iter("graphic")):
        src = unmark_image(graphic.get("src"))
        if src is not None and is_stand_in(src):
            _replace_with_text(graphic, "")
        elif src is not None:
            graphic.set("src", src)
    return out


def unindent_markdown(markdown: str) -> str:
    """`markdown` without the page source's indentation at its line starts: a paragraph, heading
    or image line that a template indented (the tail text after a <pre>, a line of a paragraph
    broken in the source) would otherwise be indented four spaces or more, which Markdown reads
    as a code block. Lines inside code fences stay as they are, and so does the indentation of
    list nesting that trafilatura writes (a nested item's "  - ", the parent item's text after
    a sublist): a line keeps its indentation only up to the content column of the list item
    open above it (none once a blank line and an unindented block close the list); tabs are
    never ours."""
    out: list[str] = []
    fence = None  # the open fence's marker
    column = 0  # content column of the open list item; 0: none open
    blank = False  # the line before was blank
    for line in markdown.split("\n"):
        stripped = line.lstrip()
        if fence is not None:
            out.append(line)
            if stripped.rstrip().startswith(fence) and not stripped.rstrip().strip(fence[0]):
                fence = None
            continue
        if not stripped:
            out.append("")
            blank = True
            continue
        indent = line[: len(line) - len(stripped)]
        width = len(indent) if "\t" not in indent else column + 1  # a tab: the source's
        keep = width if width <= column else 0
        item = _LIST_ITEM.match(" " * keep + stripped)
        if item is not None:
            column = keep + len(item.group(2)) + 1
        elif keep == 0 and blank:
            column = 0  # an unindented block after a blank line: the list is over
        blank = False
        out.append(" " * keep + stripped)
        opening = _FENCE.match(stripped)
        # a backtick fence's info string has no backtick: "```x```" is inline code
        if opening is not None and "`" not in stripped[opening.end() :]:
            fence = opening.group(1)
    return "\n".join(out)


def unindent_text(text: str, body) -> str:
    """`text` without the page source's indentation at its line starts (a template's tabs and
    spaces before a caption, the text after a <pre>), which a model would learn as part of
    prose: a line keeps it only when it is a line of one of `body`'s code blocks (code is
    indented on purpose) or a list item (a nested item's indentation is its depth)."""
    if "\n " not in text and "\n\t" not in text and not text.startswith((" ", "\t")):
        return text
    code = {
        line.strip()
        for el in body.iter("code")
        for line in "".join(el.itertext()).split("\n")
        if line.strip()
    }
    out = []
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped != line and stripped.rstrip() not in code and not _LIST_ITEM.match(stripped):
            line = stripped
        out.append(line)
    return "\n".join(out)


def comments_text(tree, url: str, main_text: str = "") -> str:
    """Plain text of the page's reader comments (trafilatura's comment sections), without lines
    already in the main text (a forum's posts are its main content); "" if there are none."""
    if not _may_have_comments(tree):  # what trafilatura's comment xpaths need, cheaply
        return ""
    options = Extractor(comments=True, formatting=False, images=False, tables=False, url=url)
    cleaned = convert_tags(tree_cleaning(copy.deepcopy(tree), options), options, url)
    body = extract_comments(cleaned, options)[0]
    if body is None or not len(body):
        return ""
    main = " ".join(main_text.split())
    lines = [x for x in xmltotxt(body, include_formatting=False).splitlines() if x.strip()]
    kept = [x for x in lines if " ".join(x.split()) not in main]
    if len(kept) == 1 and len(kept[0].strip()) < _MIN_COMMENT_LABEL:
        return ""  # a section label alone ("Comments", "Leave a reply"): no comment
    return normalize_unicode("\n".join(kept).strip())


# Tab and accordion panels the renderer un-hides before it reads the DOM (their content is real:
# `crawlers.render.page_scripts.UNHIDE_PANELS`), so a static page keeps them as a rendered one.
_PANEL = " or ".join(
    [f"@role='{r}'" for r in UNHIDDEN_PANEL_ROLES]
    + [
        f"contains(concat(' ', normalize-space(@class), ' '), ' {c} ')"
        for c in UNHIDDEN_PANEL_CLASSES
    ]
)
# What a browser never shows: a <template>'s content (inert until a script clones it; a
# declarative shadow root, `shadowrootmode`, is shown) and an element with the `hidden`
# attribute, any value (`until-found` too: hidden until a search finds it), but those panels.
# Below <body> only, as trafilatura's own hidden-element pruning: a page whose whole body is
# hidden until its scripts run is the render decision's business.
_UNRENDERED = XPath(
    f"//template[not(@shadowrootmode or @shadowroot)] | //body//*[@hidden][not({_PANEL})]"
)


# A tag no parsed HTML has (the HTML parser never makes a namespaced one): what is to go.
_DROPPED = "{urn:refinery}unrendered"


def drop_unrendered(tree) -> int:
    """Remove from `tree` (in place) the elements a browser never renders: <template> and
    `hidden` elements but tab and accordion panels (their tails stay, joined to the text before
    them); how many were removed, nested ones included. They are marked, then removed in one
    `strip_elements` pass: removing them one by one re-joins the growing text before them each
    time, quadratic in the number of hidden siblings."""
    dropped = [el for el in _UNRENDERED(tree) if el.getparent() is not None]
    if not dropped:
        return 0
    parents = {el.getparent() for el in dropped}
    for el in dropped:
        el.tag = _DROPPED
    strip_elements(tree, _DROPPED, with_tail=False)
    # The kept tails stay separate text nodes next to the text before them, which every later
    # read of that text joins again: set each text once, one node (linear in the text).
    for parent in parents:
        if parent.tag == _DROPPED:  # gone with the element around it
            continue
        parent.text = parent.text
        for child in parent:
            child.tail = child.tail
    return len(dropped)


def parse_html(html: str):
    """The page parsed as trafilatura parses it (its parser drops HTML comments and processing
    instructions: a page's commented-out markup must not become text or split a paragraph);
    None where trafilatura sees no HTML document."""
    return load_html(clean_text(html))


def extract_content(html: str, url: str, *, favor: str = "balanced", tree=None) -> Content | None:
    """Run trafilatura and derive every output from its XML tree; None if it finds no content.
    `tree`: the page as `parse_html` parsed it, when the caller has it. It is changed in place:
    what a browser never renders is removed (`drop_unrendered`), a formula whose TeX source the
    page carries becomes that source (`math_tex.formulas_as_tex`), a table whose spans would blow
    it up loses them (`tables.ignore_oversized_spans`), a small table nested in a data table's
    cell becomes that cell's text (`tables.flatten_nested_tables`), a lazily loaded <img> gets the
    `data-src` its browser would load and every image source is made absolute against the
    page's base URL, or removed when it is no http(s) URL (`img_sources`)."""
    if tree is None:
        tree = parse_html(html)
    if tree is None:
        return None
    base = document_base(tree, url)
    drop_unrendered(tree)
    formulas_as_tex(tree)
    ignore_oversized_spans(tree)
    flatten_nested_tables(tree)
    resolve_lazy_images(tree)
    absolute_image_sources(tree, base)
    raw = RawTree(tree)
    doc = _run_trafilatura(raw, url, favor)
    text = _plain(doc, tree)
    if not text:
        return None
    body = doc.body
    if body is None or not len(body):  # the few-words page of _plain: one paragraph
        body = Element("body")
        SubElement(body, "p").text = text
    elif _has_images(tree):
        # The image run only places images: fast (no second opinion from the fallbacks), unless
        # that finds none on a short page (trafilatura falls back to a baseline that drops every
        # image), then in full, then in precision mode.
        imaged = _image_body(raw, url, favor, fast=True)
        for mode in (favor, "precision") if len(text) < SHORT_PAGE_CHARS else ():
            if imaged is not None and imaged.find(".//graphic") is not None:
                break
            imaged = _image_body(raw, url, mode, fast=False)
        body = place_images(body, imaged, teaser_sources(tree, text))
        drop_sourceless_images(body, base)
    # Plain text leaves images out; Markdown keeps them as ![alt](src) in place, and its
    # tables are written by `md_tables` (layout tables unwrapped; `body` is left as it is).
    markdown = unindent_markdown(body_markdown(body)).strip()
    text = unindent_text(_ROW_END.sub("|", normalize_unicode(text)), body)
    meta = page_metadata(tree, url)
    return Content(
        text=text,
        markdown=normalize_unicode(markdown),
        title=meta.title,
        author=meta.author,
        date=meta.date,
        sitename=meta.sitename,
        canonical_url=canonical_url(tree, base),
        lang_hint=page_lang_hint(tree),
        blocks=interleave(body, base),
        comments=comments_text(tree, url, text),
    )
