"""The page's tree made ready for trafilatura: chrome removed, posts made paragraphs.

Normalisations of the parsed HTML before main-content extraction, all in place:

* `prune_chrome` removes elements whose class or id is a widely used boilerplate marker of forum
  and wiki software (phpBB, vBulletin, SMF, MyBB, XenForo signatures and poster profiles;
  MediaWiki edit-section links, tables of contents, jump links, `noprint` and navigation boxes).
  trafilatura keeps them otherwise: a signature or a "Contents" box looks like a paragraph.
* `drop_heading_permalinks` removes the permalink beside a heading (Sphinx's and MkDocs' "¶",
  Docusaurus' zero-width `hash-link`, GitHub's octicon `anchor`, VitePress' "#", ...): as text
  it ends every heading, and the title read from the <h1>, with its symbol.
* `prune_shop_chrome` removes a shop's recommendation blocks ("You may also like": Shopify,
  WooCommerce, Magento), and on a product page any other grid of product cards (price, link,
  "Add to cart"); a page of products (a collection) keeps its grid as it is.
* `unmark_repeated_frames` takes a content-frame class (`content`, `post`, `entry`) from
  elements that repeat it side by side: trafilatura takes the first element of such a class for
  the page's main content, which on a forum (phpBB's `div.content`) is the first post alone.
  The sections of one article (eHow's steps: no poster, date or post id each) keep it.
* `wrap_loose_text` puts each run of loose text beside block elements (a forum reply written
  after its `</blockquote>` right inside the post's div, with its <br>s) into a block of its
  own, and the text of each repeated frame into paragraphs: trafilatura keeps the blocks of such
  a container and drops the text beside them, so every reply that quotes would lose its words.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

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
    return _remove(tree, [el for el in _CANDIDATES(tree) if _is_chrome(el)])


def _remove(tree, elements: list) -> int:
    """Remove `elements` from `tree` (in place), their tails kept; how many there were."""
    if elements:
        for el in elements:
            el.tag = _PRUNED
        strip_elements(tree, _PRUNED, with_tail=False)
    return len(elements)


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


# Marks of a post (a forum's, a blog index's) in the block that repeats a frame: its author, its
# date, a post id, a link to the poster's profile. The steps or sections of one article (eHow's
# `div.content` per step) carry none: the article has them once, above its sections.
_POST_MARKS = XPath(
    "descendant-or-self::*[self::time or @datetime or @rel='author' or @itemprop='author'"
    " or @data-author or @data-post-id]"
)
_POST_CLASS = re.compile(r"author|username|poster|byline|postdate|permalink|(?:^|[\s_-])date\b")
_POST_ID = re.compile(r"\d{3,}")  # phpBB's p1234, vBulletin's post_1234, SMF's msg1234
_PROFILE_HREF = re.compile(r"memberlist\.php|/members?/|/users?/|/u/|profile", re.I)
_HEADINGS_BELOW_H1 = ("h2", "h3", "h4", "h5", "h6")


def _common_ancestor(els):
    """The lowest element holding all of `els` (none of them inside another)."""
    common = list(els[0].iterancestors())
    for el in els[1:]:
        ancestors = set(el.iterancestors())
        common = [a for a in common if a in ancestors]
    return common[0]


def _has_post_marks(block) -> bool:
    if _POST_MARKS(block):
        return True
    for el in block.iter():
        if not isinstance(el.tag, str):
            continue
        if _POST_CLASS.search(el.get("class") or "") or _POST_ID.search(el.get("id") or ""):
            return True
        if el.tag == "a" and _PROFILE_HREF.search(el.get("href") or ""):
            return True
    return False


def _sections_of_one_article(els) -> bool:
    """Whether the frames `els` are sections of one article, not posts: no block that repeats
    a frame (the frame up to the child of their common ancestor) carries a post's marks, and
    they sit in one article -- an <article> or `articleBody` around them all, the page's only
    <h1> above them in their common ancestor (eHow: the title, then a `div.content` per step),
    or a heading opening each."""
    common = _common_ancestor(els)
    blocks = []
    for el in els:
        block = el
        while block.getparent() is not common:
            block = block.getparent()
        blocks.append(block)
    if any(_has_post_marks(b) for b in blocks):
        return False
    if any(
        a.tag == "article" or a.get("itemprop") == "articleBody"
        for a in (common, *common.iterancestors())
    ):
        return True
    h1s = common.getroottree().getroot().findall(".//h1")
    if len(h1s) == 1 and common in h1s[0].iterancestors():
        return True
    return all(
        (first := next((c for c in el if isinstance(c.tag, str)), None)) is not None
        and first.tag in _HEADINGS_BELOW_H1
        for el in els
    )


def unmark_repeated_frames(tree) -> int:
    """Rename (in place) the class of elements that share one of `FRAME_CLASSES` with others
    beside them (none inside another): on a forum each post is a `div.content` (phpBB), and
    trafilatura would take the first post for the whole page. Without the class it finds the
    posts' common frame as on any page; how many elements were renamed. Frames that are the
    sections of one article (`_sections_of_one_article`) keep their class: trafilatura reads an
    article's sections in its frame, and without it took another frame and lost some (eHow's
    "What You'll Need" list)."""
    groups: dict[str, list] = {}
    for el in _FRAMES(tree):
        groups.setdefault(el.get("class"), []).append(el)
    renamed = 0
    for els in groups.values():
        members = set(els)
        if len(els) < 2 or any(a in members for el in els for a in el.iterancestors()):
            continue
        if _sections_of_one_article(els):
            continue
        for el in els:
            el.set("class", REPEATED_CLASS)
        renamed += len(els)
    return renamed


# Heading permalinks: the "¶" (Sphinx, MkDocs, Jupyter, python-markdown's toc), "#" (VitePress,
# Hugo and Jekyll themes), "§" (rustdoc), "🔗" (Zola), zero-width (Docusaurus) or icon-only
# (GitHub's octicon, anchor.js, Docsy) link of a heading to itself. As text each glues its
# symbol to its heading, and to the title read from the <h1>.
PERMALINK_CLASSES = frozenset(
    {
        "headerlink",  # Sphinx (headings, definitions, captions), MkDocs, python-markdown's toc
        "hash-link",  # Docusaurus
        "anchor",  # GitHub (octicon), rustdoc, Gatsby's autolink-headers
        "anchorjs-link",  # anchor.js
        "anchor-link",  # Jupyter nbconvert, Starlight, Hugo themes
        "heading-anchor",
        "header-anchor",  # VitePress, VuePress, markdown-it-anchor
        "anchor-heading",  # Just the Docs (Jekyll)
        "doc-anchor",  # rustdoc
        "td-heading-self-link",  # Docsy (Hugo)
        "zola-anchor",  # Zola
    }
)
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# Screen-reader-only text of a permalink ("Section titled ...", "Permalink") is not shown.
_SR_ONLY = frozenset({"sr-only", "screen-reader-text", "visually-hidden", "visuallyhidden"})
# Characters of no width that permalinks use as their text (Docusaurus: U+200B).
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\ufe0e\ufe0f"), None)
_LINKS = XPath("//a[@class or starts-with(@href, '#')]")
_MEDIA = ("img", "picture", "video", "audio", "iframe", "object")


def _classes(el) -> set[str]:
    return set((el.get("class") or "").split())


def _shown_text(el) -> str:
    """`el`'s text but that of screen-reader-only elements, without characters of no width."""
    parts = [el.text or ""]
    for child in el:
        if isinstance(child.tag, str) and not _classes(child) & _SR_ONLY:
            parts.append(_shown_text(child))
        parts.append(child.tail or "")
    return "".join(parts).translate(_INVISIBLE).strip()


def _is_permalink(a) -> bool:
    """A link showing no letter or digit (a symbol, an icon, nothing) and no media that is a
    permalink: of a class of `PERMALINK_CLASSES`, or, inside h1-h6, to `#id` of the heading,
    of an element around or inside it, or of the link itself."""
    marked = bool(_classes(a) & PERMALINK_CLASSES)
    target = (a.get("href") or "").strip()[1:] if (a.get("href") or "").startswith("#") else ""
    heading = None if marked or not target else next(a.iterancestors(*_HEADINGS), None)
    if not marked and heading is None:
        return False
    if any(c.isalnum() for c in _shown_text(a)) or next(a.iter(*_MEDIA), None) is not None:
        return False
    targets = {target, unquote(target)}  # a fragment may be percent-encoded, its id not
    if marked or a.get("id") in targets or a.get("name") in targets:
        return True
    around = (heading, *heading.iterancestors(), *heading.iterdescendants())
    return any(x.get("id") in targets for x in around if isinstance(x.tag, str))


def drop_heading_permalinks(tree) -> int:
    """Remove from `tree` (in place) the permalinks of headings (and of Sphinx's definitions
    and captions, `_is_permalink`), their tails kept; how many were removed."""
    return _remove(tree, [a for a in _LINKS(tree) if _is_permalink(a)])


# Shop pages: what a product page shows beside its product. Recommendation blocks (Shopify's
# `<product-recommendations>` and its classes, WooCommerce's related products and upsells,
# Magento's related, upsell and cross-sell blocks) list other products, each a name, a price
# and an "Add to cart" button. (A theme's tax note, Shopify's "Tax included. Shipping calculated
# at checkout." in the shop's language, stays: without it a short product page falls below
# trafilatura's length threshold and its fallback takes the announcement bar instead.)
SHOP_CHROME_TAGS = frozenset({"product-recommendations"})  # Shopify's custom element
SHOP_CHROME_CLASSES = frozenset(
    {
        "product-recommendations",  # Shopify (Debut and many themes)
        "related-products",  # Shopify Dawn
        "complementary-products",  # Shopify Dawn ("Pairs well with")
        "upsells",  # WooCommerce ("You may also like…")
        "up-sells",
        "cross-sells",  # WooCommerce's cart
    }
)
# Class tokens that mark a block only together: WooCommerce's `section.related.products`,
# Magento's `div.block.related`, `.block.upsell`, `.block.crosssell`.
SHOP_CHROME_CLASS_PAIRS = (
    frozenset({"related", "products"}),
    frozenset({"block", "related"}),
    frozenset({"block", "upsell"}),
    frozenset({"block", "crosssell"}),
)
_SHOP_MARKERS = ("recommendations", "related", "complementary-products", "upsell", "up-sells")
_SHOP_MARKERS += ("cross-sells", "crosssell")
_SHOP_CANDIDATES = XPath(
    "//product-recommendations | "
    + " | ".join(f"//@class[contains(., '{c}')]/.." for c in _SHOP_MARKERS)
)


def _is_shop_chrome(el) -> bool:
    if not isinstance(el.tag, str) or el.tag in ("html", "body", "main"):
        return False
    classes = _classes(el)
    if not (
        el.tag in SHOP_CHROME_TAGS
        or classes & SHOP_CHROME_CLASSES
        or any(pair <= classes for pair in SHOP_CHROME_CLASS_PAIRS)
    ):
        return False
    return next(el.iter("h1"), None) is None  # never a wrapper around the product itself


# An "Add to cart" control: a link adding to the cart (Shopify and Magento `/cart/add`,
# WooCommerce `?add-to-cart=`) or an element of a cart button class, with a short label.
_CART_HREFS = ("/cart/add", "add-to-cart=")
CART_CONTROL_CLASSES = frozenset(
    {
        "add_to_cart_button",  # WooCommerce
        "ajax_add_to_cart",
        "single_add_to_cart_button",
        "quick-add__submit",  # Shopify Dawn
        "tocart",  # Magento
        "add-to-cart",
        "btn-add-to-cart",
        "add-to-cart-button",
    }
)
_CART_LABEL_WORDS = 5
_CART_CLASS_PARTS = ("add_to_cart", "quick-add", "tocart", "add-to-cart")
_CART_CONTROLS = XPath(
    " | ".join(f"//a[contains(@href, '{h}')]" for h in _CART_HREFS)
    + " | "
    + " | ".join(f"//@class[contains(., '{c}')]/.." for c in _CART_CLASS_PARTS)
)
# What the searches need, read in one pass each (a page of none of them, most pages, costs two
# attribute reads): every class value and every link's href, each joined in one string.
_CLASS_VALUES = XPath("//@class", smart_strings=False)
_HREF_VALUES = XPath("//a/@href", smart_strings=False)
# A form adding a product to the cart: Shopify's `/cart/add`, WooCommerce's (its `add-to-cart`
# button or field), Magento's #product_addtocart_form.
_CART_FORMS = XPath(
    "//form[contains(@action, '/cart/add') or contains(@action, 'add-to-cart') or "
    "@id='product_addtocart_form' or .//*[@name='add-to-cart']]"
)
_OG_PRODUCT = XPath(
    "//meta[@property='og:type'][normalize-space(@content) = 'product' or "
    "normalize-space(@content) = 'product.item' or normalize-space(@content) = 'og:product']"
)
# A price: a currency sign or code beside a number.
_CURRENCY = r"(?:[$€£¥₹₩₽₺₴]|R\$|\b(?:USD|EUR|GBP|CAD|AUD|NZD|JPY|CHF|SEK|NOK|DKK|PLN|CZK|INR)\b)"
_PRICE = re.compile(rf"{_CURRENCY}\s?\d|\d(?:[\d.,]*\d)?\s?{_CURRENCY}")
_CARD_CHARS = 300  # a product card: a name, a price, a label or two; no paragraph


def _is_cart_control(el) -> bool:
    if not isinstance(el.tag, str):
        return False
    href = (el.get("href") or "") if el.tag == "a" else ""
    if not (any(h in href for h in _CART_HREFS) or _classes(el) & CART_CONTROL_CLASSES):
        return False
    return len(el.text_content().split()) <= _CART_LABEL_WORDS


def _is_card(el, controls: set) -> bool:
    """A product card: a short block with a price, a link other than the cart's and an
    "Add to cart" control."""
    if not isinstance(el.tag, str):
        return False
    text = " ".join(el.text_content().split())
    if len(text) > _CARD_CHARS or not _PRICE.search(text):
        return False
    if not any(x in controls for x in el.iter()):
        return False
    return any(a not in controls and a.get("href") for a in el.iter("a"))


def _card_grids(tree, controls: set) -> list:
    """The elements of two or more children that are all product cards (`_is_card`; children
    of no text aside), but <main>, <body> and any holding an <h1>; none inside another."""
    parents = {}
    for control in controls:
        for anc in control.iterancestors():
            parents.setdefault(anc, None)
    grids = []
    for el in parents:
        if el.tag in ("html", "body", "main") or next(el.iter("h1"), None) is not None:
            continue  # never the page, nor the block of the page's own product
        kids = [c for c in el if isinstance(c.tag, str) and c.text_content().strip()]
        if len(kids) >= 2 and all(_is_card(c, controls) for c in kids):
            grids.append(el)
    found = set(grids)
    return [g for g in grids if not any(a in found for a in g.iterancestors())]


def _is_product_page(tree, grids: list) -> bool:
    """Whether the page is about one product: its Open Graph type says so, or a cart form
    outside the grids shares a block (not <main>, <body>) with the page's first <h1>, as the
    product's title and its "Add to cart" do; on a page with no <h1>, any such form."""
    if _OG_PRODUCT(tree):
        return True
    h1 = next(tree.iter("h1"), None)
    for form in _CART_FORMS(tree):
        around = set(form.iterancestors())
        if any(g in around for g in grids):
            continue
        if h1 is None:
            return True
        common = next((a for a in h1.iterancestors() if a in around), None)
        if common is not None and common.tag not in ("main", "body", "html"):
            return True
    return False


def _with_heading(grid):
    """The grid with the block around it that holds only it and headings ("You may also
    like"), as far out as such blocks go (never <main> or <body>)."""
    el = grid
    while True:
        parent = el.getparent()
        if parent is None or parent.tag in ("main", "body", "html") or (parent.text or "").strip():
            return el
        others = [c for c in parent if c is not el and isinstance(c.tag, str)]
        if any(c.tag not in _HEADINGS and c.text_content().strip() for c in others):
            return el
        if any((c.tail or "").strip() for c in parent) or next(parent.iter("h1"), None) is not None:
            return el
        el = parent


def prune_shop_chrome(tree) -> int:
    """Remove from `tree` (in place) a shop's recommendation blocks (`SHOP_CHROME_TAGS`,
    `SHOP_CHROME_CLASSES`, `SHOP_CHROME_CLASS_PAIRS`) and, on a product page
    (`_is_product_page`), any other grid of product cards (each a short block with a price, a
    product link and an "Add to cart" control) with its headings; how many blocks were
    removed (nested ones included). A page without a product of its own (a collection, a
    category, a search) is a list of products: its grids stay as they are, "Add to cart"
    labels too (without them a short collection falls below trafilatura's length threshold,
    and its fallback takes the whole page, menus and filters included)."""
    classes = " ".join(_CLASS_VALUES(tree))
    tokens = set(classes.split())  # of all elements together: a superset of any one's
    pruned = []
    if (
        tokens & SHOP_CHROME_CLASSES
        or any(pair <= tokens for pair in SHOP_CHROME_CLASS_PAIRS)
        or next(tree.iter(*SHOP_CHROME_TAGS), None) is not None
    ):
        pruned = [el for el in _SHOP_CANDIDATES(tree) if _is_shop_chrome(el)]
    _remove(tree, pruned)
    hrefs = "\0".join(_HREF_VALUES(tree))
    if not any(c in classes for c in _CART_CLASS_PARTS) and not any(
        h in hrefs for h in _CART_HREFS
    ):
        return len(pruned)
    controls = {el for el in _CART_CONTROLS(tree) if _is_cart_control(el)}
    if not controls:
        return len(pruned)
    grids = _card_grids(tree, controls)
    if not grids or not _is_product_page(tree, grids):
        return len(pruned)
    return len(pruned) + _remove(tree, [_with_heading(g) for g in grids])


def prepare_tree(tree) -> None:
    """The normalisations in order: chrome first (a signature's text is no paragraph to wrap),
    heading permalinks and shop chrome, then repeated frames and loose text."""
    prune_chrome(tree)
    drop_heading_permalinks(tree)
    prune_shop_chrome(tree)
    unmark_repeated_frames(tree)
    wrap_loose_text(tree)
