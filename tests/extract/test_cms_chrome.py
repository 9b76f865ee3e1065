"""Docs and shop chrome, as the CMSs write it: heading permalinks (Sphinx, MkDocs Material,
Docusaurus, GitHub, VitePress), shop recommendations and unmarked "you may also like" card grids
on product pages (Shopify Dawn and Debut, WooCommerce, Magento) while a collection keeps its
grid, entities in titles decoded once, and table rows of the plain text without a trailing
space.

The markup is each generator's own (class names, attributes, the permalink's symbol), with
prose of its own, not the held-out site's strings.
"""

from __future__ import annotations

import pytest
from lxml import html as lxml_html

from crawlers.extract import extract_page
from crawlers.extract.metadata import page_metadata
from crawlers.extract.prune import drop_heading_permalinks, prune_shop_chrome

PROSE = [
    "The scheduler reads every job file at start-up and keeps the parsed graph in memory, so a "
    "change to a file on disk only takes effect after the next reload of the daemon.",
    "Each worker pulls one task at a time from the shared queue and reports its exit status "
    "back to the coordinator, which retries a failed task twice before giving up on it.",
    "Timeouts are measured from the moment a task leaves the queue, not from when it was "
    "submitted, so a long queue does not eat into the time a slow task is allowed to run.",
    "Logs go to standard error by default; point the log directory option at a writable path "
    "to keep one file per task, named after the task and the attempt that produced it.",
]


def _page(body: str, head: str = "", title: str = "Page") -> str:
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"{head}</head><body>{body}</body></html>"
    )


def _extract(html: str, url: str = "https://docs.example.org/en/stable/config.html") -> dict:
    result = extract_page(
        {"url": url, "status": 200, "body": html.encode(), "training_allowed": True}
    )
    assert result.document is not None, result.reject
    return result.document


def _tree(fragment: str):
    return lxml_html.fromstring(_page(fragment))


def _text(tree) -> str:
    return " ".join(" ".join(tree.itertext()).split())


# ---------------------------------------------------------------- heading permalinks


def sphinx_rtd_page() -> str:
    """A page as Sphinx 7 with the Read the Docs theme writes it: "¶" links after the h1, each
    h2, an API signature (<dt>) and a code-block caption."""
    p = [f"<p>{x}</p>" for x in PROSE]
    body = (
        '<div class="wy-grid-for-nav"><nav class="wy-nav-side"><div class="wy-menu">'
        '<ul><li class="toctree-l1"><a class="reference internal" href="../index.html">Home</a>'
        "</li></ul></div></nav>"
        '<section class="wy-nav-content-wrap"><div class="wy-nav-content"><div class="rst-content">'
        '<div role="main" class="document" itemscope="itemscope" '
        'itemtype="http://schema.org/Article"><div itemprop="articleBody">'
        '<section id="configuring-workers"><h1>Configuring workers<a class="headerlink" '
        'href="#configuring-workers" title="Link to this heading">¶</a></h1>'
        + p[0]
        + '<section id="queues"><h2>Queues and retries<a class="headerlink" href="#queues" '
        'title="Link to this heading">¶</a></h2>'
        + p[1]
        + '<dl class="py function"><dt class="sig sig-object py" id="pool.submit">'
        '<span class="sig-prename descclassname"><span class="pre">pool.</span></span>'
        '<span class="sig-name descname"><span class="pre">submit</span></span>'
        '<span class="sig-paren">(</span><em class="sig-param">task</em>'
        '<span class="sig-paren">)</span><a class="headerlink" href="#pool.submit" '
        'title="Link to this definition">¶</a></dt><dd><p>Queue one task for the next free '
        "worker and return its handle at once, without waiting for it to start.</p></dd></dl>"
        '<div class="literal-block-wrapper docutils container" id="id1">'
        '<div class="code-block-caption"><span class="caption-text">workers.toml</span>'
        '<a class="headerlink" href="#id1" title="Link to this code">¶</a></div>'
        '<div class="highlight-toml notranslate"><div class="highlight"><pre>'
        "[workers]\ncount = 4\n</pre></div></div></div>"
        + p[2]
        + "</section>"
        + '<section id="logging"><h2>Logging<a class="headerlink" href="#logging" '
        'title="Link to this heading">¶</a></h2>'
        + p[3]
        + "</section></section></div></div></div></div></section></div>"
    )
    return _page(body, title="Configuring workers &mdash; Taskpool 2.1 documentation")


def test_sphinx_permalinks_leave_title_and_text():
    doc = _extract(sphinx_rtd_page())
    assert doc["title"] == "Configuring workers"
    assert "¶" not in doc["text"] and "¶" not in doc["markdown"]
    lines = doc["text"].splitlines()
    assert "Queues and retries" in lines and "Logging" in lines
    assert "# Configuring workers" in doc["markdown"].splitlines()
    assert all(x in doc["text"] for x in PROSE)


def test_mkdocs_material_docusaurus_vitepress_permalinks():
    tree = _tree(
        # MkDocs Material
        '<article class="md-content__inner md-typeset"><h1 id="install">Install'
        '<a class="headerlink" href="#install" title="Permanent link">&para;</a></h1>'
        # Docusaurus: the heading itself has class "anchor"; its link is a zero-width space
        '<h2 class="anchor anchorWithStickyNavbar_LWe7" id="from-source">From source'
        '<a href="#from-source" class="hash-link" aria-label="Direct link to From source" '
        'title="Direct link to From source">\u200b</a></h2>'
        # VitePress
        '<h2 id="upgrade" tabindex="-1">Upgrade <a class="header-anchor" href="#upgrade" '
        'aria-label="Permalink to &quot;Upgrade&quot;">\u200b</a></h2>'
        # a theme's own "#" link to its heading, no class
        '<h3 id="faq">FAQ <a href="#faq">#</a></h3>'
        # a news theme's icon link to the block around the heading, its fragment
        # percent-encoded (t3n.de)
        '<div class="c-article__headline" id="„Neue_Zellchemie“"><h2>'
        '<span class="c-article__wrapper"><a class="c-article__anchor" '
        'href="#%E2%80%9ENeue_Zellchemie%E2%80%9C"><svg width="14px" viewbox="0 -1 16 16">'
        '<path d="M14.7 7.4"></path></svg></a>„Neue Zellchemie“</span></h2></div></article>'
    )
    assert drop_heading_permalinks(tree) == 5
    headings = [_text(h) for h in tree.iter("h1", "h2", "h3")]
    assert headings == ["Install", "From source", "Upgrade", "FAQ", "„Neue Zellchemie“"]
    assert tree.find(".//svg") is None
    assert tree.find(".//h2[@id='from-source']") is not None  # the class "anchor" heading stays


def test_github_octicon_anchors_old_and_new_markup():
    svg = (
        '<svg class="octicon octicon-link" viewBox="0 0 16 16" width="16" height="16" '
        'aria-hidden="true"><path d="m7.775 3.275 1.25-1.25"></path></svg>'
    )
    tree = _tree(
        '<article class="markdown-body entry-content container-lg" itemprop="text">'
        f'<h2><a id="user-content-usage" class="anchor" aria-hidden="true" href="#usage">{svg}'
        "</a>Usage</h2><p>Run it.</p>"
        '<div class="markdown-heading" dir="auto"><h2 class="heading-element" dir="auto">'
        'Licence</h2><a id="user-content-licence" class="anchor" aria-label="Permalink: Licence" '
        f'href="#licence">{svg}</a></div><p>MIT.</p></article>'
    )
    assert drop_heading_permalinks(tree) == 2
    assert [_text(x) for x in tree.iter("h2", "p")] == ["Usage", "Run it.", "Licence", "MIT."]
    assert tree.find(".//svg") is None and tree.find(".//a") is None


def test_links_with_words_or_elsewhere_stay():
    tree = _tree(
        # mdBook: the heading's text is its own link
        '<main><h2 id="intro"><a class="header" href="#intro">Introduction</a></h2>'
        # a link to another section, a footnote, an image link of class "anchor"
        '<h2 id="step-1">Step 1 <a href="#step-2">&rarr;</a></h2>'
        '<h3 id="notes">Notes<sup><a href="#fn1">1</a></sup></h3>'
        '<p><a class="anchor" href="#top"><img src="/top.png" alt=""></a></p>'
        # an in-page link in prose, not in a heading
        '<p>See <a href="#intro">the introduction</a> or the symbol <a href="#x">¶</a>.</p></main>'
    )
    before = _text(tree)
    assert drop_heading_permalinks(tree) == 0
    assert _text(tree) == before
    assert tree.find(".//img") is not None


# ---------------------------------------------------------------- shops


DESCRIPTION = [
    "Knitted from undyed Shetland wool on a small mill in the Borders, this cardigan keeps its "
    "shape after years of wear and softens with every wash in cold water.",
    "Reduced from $96 to $74 for the spring: the price drops once a year when the mill clears "
    "its shelves before the new clip arrives in June.",
    "The horn buttons are cut from naturally shed antlers, so no two are alike; spare buttons "
    "come in a small cotton pouch sewn inside the left front panel.",
]
OTHERS = [
    ("Harbour Beanie", 28),
    ("Fell Walking Socks", 19),
    ("Drystone Scarf", 45),
    ("Lighthouse Mittens", 32),
]


def _dawn_card(name: str, price: int, *, quick_add: bool) -> str:
    handle = name.lower().replace(" ", "-")
    add = (
        f'<div class="quick-add no-js-hidden"><product-form><form method="post" '
        f'action="/cart/add" class="form"><input type="hidden" name="id" value="4{price}">'
        f'<button name="add" class="quick-add__submit button button--full-width '
        f'button--secondary">Add to cart</button></form></product-form></div>'
        f'<a href="/cart/add?id=4{price}&amp;quantity=1" class="quick-add__submit">'
        "Add to cart</a>"
        if quick_add
        else ""
    )
    return (
        '<li class="grid__item"><div class="card-wrapper product-card-wrapper underline-links-hover">'
        '<div class="card card--standard card--media"><div class="card__content">'
        f'<h3 class="card__heading h5"><a href="/products/{handle}" class="full-unstyled-link">'
        f'{name}</a></h3><div class="card-information"><div class="price"><div class="price__container">'
        f'<span class="price-item price-item--regular">${price}.00 USD</span></div></div></div>'
        f"</div></div>{add}</div></li>"
    )


def product_page(theme: str, *, og_type: bool = True) -> str:
    """A Shopify product page: the product (its form adds to /cart/add; the theme's tax note)
    and the shop's other products under it. `theme`: "dawn" (Dawn's <product-recommendations>
    in a section of its own), "debut" (Debut's `div.product-recommendations` in <main>, the
    tax note a <small>) or "custom" (a section of no recommendation class, each card with a
    quick-add link). `og_type=False`: no Open Graph type, the product form tells."""
    cards = "".join(_dawn_card(n, p, quick_add=theme == "custom") for n, p in OTHERS)
    grid = f'<ul class="grid product-grid grid--4-col-desktop" role="list">{cards}</ul>'
    recs = {
        "dawn": '<div id="shopify-section-template--1__related-products" class="shopify-section">'
        '<product-recommendations class="related-products page-width isolate" '
        'data-url="/recommendations/products?product_id=1&amp;limit=4">'
        '<h2 class="related-products__heading inline-richtext h2">You may also like</h2>'
        f"{grid}</product-recommendations></div>",
        "debut": '<div class="product-recommendations" data-product-id="1" data-limit="4">'
        '<div class="page-width"><div class="section-header text-center">'
        f"<h2>You may also like</h2></div>{grid}</div></div>",
        "custom": '<section class="shopify-section section-custom"><div class="page-width">'
        f'<h2 class="title">Customers also bought</h2>{grid}</div></section>',
    }[theme]
    tag = "small" if theme == "debut" else "div"
    main = (
        '<main id="MainContent" class="content-for-layout focus-none" role="main">'
        '<section id="shopify-section-template--1__main" class="shopify-section section">'
        '<div class="product product--large grid grid--1-col grid--2-col-tablet page-width">'
        '<div class="product__info-wrapper grid__item"><div class="product__info-container">'
        '<div class="product__title"><h1>Borders Cardigan</h1></div>'
        '<div class="price price--large"><span class="price-item price-item--regular">'
        "$74.00 USD</span></div>"
        f'<{tag} class="product__tax caption rte">Tax included. '
        f'<a href="/policies/shipping-policy">Shipping</a> calculated at checkout.</{tag}>'
        '<product-form class="product-form"><form method="post" action="/cart/add" '
        'id="product-form-template--1__main" class="form" enctype="multipart/form-data">'
        '<input type="hidden" name="id" value="41"><button type="submit" name="add" '
        'class="product-form__submit button button--full-width">Add to cart</button></form>'
        "</product-form>"
        '<div class="product__description rte quick-add-hidden">'
        + "".join(f"<p>{x}</p>" for x in DESCRIPTION)
        + "</div></div></div></div></section>"
        + recs
        + "</main>"
    )
    head = '<meta property="og:type" content="product">' if og_type else ""
    return _page(
        '<header class="header"><a href="/">Northfield Knits</a></header>' + main,
        head,
        "Borders Cardigan &ndash; Northfield Knits",
    )


def _assert_product_only(doc: dict) -> None:
    assert doc["title"] == "Borders Cardigan"
    assert all(x in doc["text"] for x in DESCRIPTION)  # prose with prices stays
    for name, _ in OTHERS:
        assert name not in doc["text"] and name not in doc["markdown"]
    for chrome in ("You may also like", "Customers also bought", "Add to cart"):
        assert chrome not in doc["text"], chrome


@pytest.mark.parametrize("theme", ["dawn", "debut"])
def test_shopify_recommendations_go(theme):
    page = product_page(theme)
    tree = lxml_html.fromstring(page)
    assert prune_shop_chrome(tree) == 1
    assert "You may also like" not in _text(tree)
    _assert_product_only(_extract(page, "https://shop.example.com/products/b"))


def test_unmarked_card_grid_on_a_product_page_goes_with_its_heading():
    page = product_page("custom", og_type=False)
    tree = lxml_html.fromstring(page)
    assert prune_shop_chrome(tree) == 1  # the grid with its heading
    assert "Customers also bought" not in _text(tree)
    assert tree.find(".//section[@class='shopify-section section-custom']") is None
    _assert_product_only(_extract(page, "https://shop.example.com/products/b"))


def test_collection_page_keeps_its_product_grid():
    """A collection is a list of products: its grid is its content and stays as it is, though
    the page also has a featured product's cart form (in a block of its own, not the <h1>'s)
    and a mini cart form in its header."""
    cards = "".join(_dawn_card(n, p, quick_add=True) for n, p in OTHERS * 3)
    featured = (
        '<section class="shopify-section featured-product"><h2>Scarf of the month</h2>'
        '<form method="post" action="/cart/add"><input type="hidden" name="id" value="7">'
        '<button name="add">Add to cart</button></form></section>'
    )
    page = _page(
        '<header><form action="/cart" method="post" class="cart"><button>Cart (0)</button>'
        "</form></header>"
        '<main id="MainContent" role="main"><div class="collection-hero">'
        '<h1 class="collection-hero__title">Winter accessories</h1></div>'
        f'{featured}<ul id="product-grid" class="grid product-grid">{cards}</ul></main>',
        '<meta property="og:type" content="website">',
        "Winter accessories &ndash; Northfield Knits",
    )
    tree = lxml_html.fromstring(page)
    before = _text(tree)
    assert prune_shop_chrome(tree) == 0
    assert _text(tree) == before
    text = " ".join(_extract(page, "https://shop.example.com/collections/winter")["text"].split())
    assert all(f"{n} ${p}.00 USD" in text for n, p in OTHERS)


def test_woocommerce_and_magento_related_blocks_go():
    def woo_item(name: str, price: int, pid: int) -> str:
        return (
            f'<li class="product type-product post-{pid} status-publish instock">'
            f'<a href="https://shop.example.com/product/{pid}/" class="woocommerce-LoopProduct-link '
            'woocommerce-loop-product__link"><h2 class="woocommerce-loop-product__title">'
            f'{name}</h2><span class="price"><span class="woocommerce-Price-amount amount"><bdi>'
            f'<span class="woocommerce-Price-currencySymbol">&pound;</span>{price}.00</bdi>'
            f'</span></span></a><a href="?add-to-cart={pid}" data-quantity="1" class="button '
            f'product_type_simple add_to_cart_button ajax_add_to_cart" data-product_id="{pid}" '
            f'rel="nofollow">Add to basket</a></li>'
        )

    items = "".join(woo_item(n, p, 10 + i) for i, (n, p) in enumerate(OTHERS))
    tree = _tree(
        '<main id="main" class="site-main"><div id="product-12" class="product type-product">'
        '<div class="summary entry-summary"><h1 class="product_title entry-title">Cardigan</h1>'
        '<p class="price"><span class="woocommerce-Price-amount amount">&pound;74.00</span></p>'
        '<form class="cart" action="https://shop.example.com/product/cardigan/" method="post">'
        '<button type="submit" name="add-to-cart" value="12" class="single_add_to_cart_button '
        'button alt">Add to basket</button></form></div>'
        '<div class="woocommerce-Tabs-panel"><p>Undyed wool, horn buttons.</p></div>'
        f'<section class="up-sells upsells products"><h2>You may also like&hellip;</h2>'
        f'<ul class="products columns-4">{items[: len(items) // 2]}</ul></section>'
        f'<section class="related products"><h2>Related products</h2>'
        f'<ul class="products columns-4">{items}</ul></section></div>'
        # Magento 2
        '<div class="block related" data-mage-init=\'{"relatedProducts":{}}\'>'
        '<div class="block-title title"><strong id="block-related-heading">Related Products'
        '</strong></div><div class="block-content content"><ol class="products list items">'
        '<li class="item product"><strong class="product name product-item-name">'
        '<a class="product-item-link" href="/mittens.html">Lighthouse Mittens</a></strong>'
        '<span class="price">$32.00</span></li></ol></div></div></main>'
    )
    assert prune_shop_chrome(tree) == 3
    text = _text(tree)
    assert "Undyed wool, horn buttons." in text and "Cardigan" in text
    assert not any(name in text for name, _ in OTHERS)
    assert "Related" not in text and "You may also like" not in text


def test_prices_in_prose_and_price_lists_without_cart_controls_stay():
    tree = _tree(
        "<main><h1>Price list</h1><p>A single lesson costs $40 and a block of ten costs $350, "
        "paid in advance.</p><ul>"
        '<li><a href="/lessons/single">Single lesson</a> $40.00</li>'
        '<li><a href="/lessons/ten">Ten lessons</a> $350.00</li>'
        '<li><a href="/lessons/group">Group lesson</a> $25.00</li></ul>'
        '<form method="post" action="/cart/add"><button name="add">Book</button></form></main>'
    )
    before = _text(tree)
    assert prune_shop_chrome(tree) == 0
    assert _text(tree) == before


# ---------------------------------------------------------------- entities and table rows


def test_title_entities_are_decoded_once():
    page = _page(
        "<article><h1>But I&amp;#8217;m talking about the broad</h1>"
        + "".join(f"<p>{x}</p>" for x in PROSE)
        + "</article>",
        '<meta property="og:title" content="But I&amp;#8217;m talking about the broad">',
        "But I&amp;#8217;m talking about the broad &#8211; Notes",
    )
    assert _extract(page, "https://blog.example.net/2020/01/broad/")["title"] == (
        "But I&#8217;m talking about the broad"
    )
    for title, expected in (
        ("More often&amp;#151;and more disturbingly", "More often&#151;and more disturbingly"),
        ("Salt &amp; Pepper &#8211; a history", "Salt & Pepper – a history"),
        ("Literal &amp;nbsp; spaces", "Literal &nbsp; spaces"),
    ):
        tree = lxml_html.fromstring(_page(f"<h1>{title}</h1><p>x</p>", title=title))
        assert page_metadata(tree, "https://blog.example.net/a").title == expected


def test_json_ld_title_is_decoded_once():
    # JSON-LD is a <script>: its text is raw, so an entity in it is decoded once, whether
    # trafilatura's reader decoded it already (a text with a backslash) or not.
    for script, expected in (
        (
            '{"@context":"https://schema.org","@type":"Article","headline":"Rock &amp; Roll"}',
            "Rock & Roll",
        ),
        (
            '{"@context":"https:\\/\\/schema.org","@type":"Article",'
            '"headline":"I&amp;#8217;m here"}',
            "I&#8217;m here",
        ),
        (
            '{"@context":"https://schema.org","@type":"Article","headline":"I&#8217;m here"}',
            "I’m here",
        ),
    ):
        head = f'<script type="application/ld+json">{script}</script>'
        tree = lxml_html.fromstring(_page("<p>x</p>", head, title=""))
        assert page_metadata(tree, "https://blog.example.net/a").title == expected


def test_plain_text_table_rows_end_at_their_pipe():
    table = (
        "<table><thead><tr><th>Species</th><th>Pool A</th><th>Pool B</th></tr></thead><tbody>"
        "<tr><td>Ochre star</td><td>14</td><td>9</td></tr>"
        "<tr><td>Green anemone</td><td>31</td><td>22</td></tr>"
        "<tr><td>Hermit crab</td><td></td><td>40</td></tr></tbody></table>"
    )
    page = _page(
        "<article><h1>Tide pool counts</h1>"
        + "".join(f"<p>{x}</p>" for x in PROSE[:2])
        + table
        + "".join(f"<p>{x}</p>" for x in PROSE[2:])
        + "</article>"
    )
    doc = _extract(page, "https://notes.example.org/tide-pools")
    rows = [x for x in doc["text"].splitlines() if x.startswith("|")]
    assert rows == [
        "| Species | Pool A | Pool B |",
        "|---|---|---|",
        "| Ochre star | 14 | 9 |",
        "| Green anemone | 31 | 22 |",
        "| Hermit crab |  | 40 |",
    ]
