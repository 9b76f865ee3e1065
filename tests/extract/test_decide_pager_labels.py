"""Pager controls are worded in many ways no phrase list holds: "Pokaż starsze wpisy" (show older
posts), "次の10件" (next 10), "عرض المزيد من الأخبار" (show more of the news), "さらに10件を表示".
The decision reads a label by its words (a word for more, older or next with a verb, a content
noun or a count, a few other words around them), not by a fixed phrase; labels that open a menu,
a setting or a share, or go to one next article, promise nothing. A visible "Loading the full
story…" in the article body is a loading placeholder whatever its class is called; a loading
note an ad's box holds, or one that names an ad, is not."""

from __future__ import annotations

import re

import pytest

from crawlers.render.decide import PAGER_DENY_PATTERN, PAGER_PATTERN, needs_render, promises_more

MORE = [
    "Pokaż starsze wpisy",
    "次の10件",
    "عرض المزيد من الأخبار",
    "さらに10件を表示",
    "Show 20 more",
    "Ältere Beiträge anzeigen",
    "Ещё новости",
    "Daha fazla haber göster",
    "Lihat berita lainnya",
    "Carica altri articoli",
    "Oudere berichten laden",
    "Artículos anteriores",
    "더 보기",
    "Xem thêm tin",
    "Załaduj następne 10",
]
NOT_MORE = [
    "Next article",
    "次の記事",
    "More options",
    "Show more sharing options",
    "Weitere Informationen",
    "Learn more",
    "Back to top",
    "Cookie settings",
    "Plus d'infos",
    "さらに詳しく",
]


@pytest.mark.parametrize("label", MORE)
def test_pager_labels_in_many_wordings_promise_more(label):
    assert promises_more(label), label


@pytest.mark.parametrize("label", NOT_MORE)
def test_menus_settings_details_and_single_next_items_promise_nothing(label):
    assert not promises_more(label), label


def test_the_pager_pattern_reads_as_javascript_too():
    # The browser compiles the same text (flag 'u'): no Python-only syntax in it.
    for pattern in (PAGER_PATTERN, PAGER_DENY_PATTERN):
        assert not re.search(r"\(\?P|\(\?[aiLmsux]|\\[AZ]", pattern)


HEAD = (
    '<!doctype html><html lang="{lang}"><head><meta charset="utf-8"><title>Blog</title>'
    '<script defer src="/static/js/posts.55e9b4.js"></script></head><body>'
    '<header><a href="/">Dziennik</a><nav><a href="/feed">Region</a></nav></header>'
)
POSTS = "".join(
    f'<article class="post"><p>Wpis {i}: szlak na Turbacz był dziś zasypany świeżym '
    f"śniegiem.</p></article>"
    for i in range(3)
)


@pytest.mark.parametrize(
    ("lang", "control"),
    [
        ("pl", '<button type="button" class="btn js-older">Pokaż starsze wpisy</button>'),
        ("ja", '<div role="button" tabindex="0" class="more">次の10件</div>'),
        ("ar", '<a href="#" class="js-news">عرض المزيد من الأخبار</a>'),
    ],
)
def test_a_pager_control_worded_in_the_pages_language_is_evidence(lang, control):
    html = (
        HEAD.format(lang=lang)
        + f'<main><h1>Blog</h1><section class="posts">{POSTS}</section>'
        + f'<div class="pager">{control}</div></main><footer>© 2024</footer></body></html>'
    )
    decision = needs_render(html)
    assert decision.render and "load-more control" in decision.reason, decision


ARTICLE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Glacier</title>'
    '<script src="/static/js/article.c0ffee.js"></script></head><body>'
    '<header><a href="/">Ledger</a></header><main><article class="article">'
    "<h1>Glacier retreat hits record</h1><div class='article__body'><p class='lead'>"
    "The glacier lost more ice this summer than in any year since records began.</p>"
    "{note}</div></article></main><footer>© Ledger</footer></body></html>"
)


@pytest.mark.parametrize(
    "note",
    [
        '<p class="paywall-hint">Loading the full story…</p>',
        '<p class="notice">Loading the full story…</p>',
        '<div class="paywall"><p>Loading the full story…</p></div>',
    ],
)
def test_a_loading_note_in_the_article_counts_whatever_its_class(note):
    decision = needs_render(ARTICLE.format(note=note))
    assert decision.render and "loading placeholder" in decision.reason, decision


@pytest.mark.parametrize(
    "note",
    [
        '<div class="ad-slot"><p>Loading…</p></div>',
        '<p class="note">Anzeige wird geladen…</p>',
        '<p class="hint">Loading comments…</p>',
    ],
)
def test_an_ads_loading_note_or_one_naming_an_ad_is_no_placeholder(note):
    decision = needs_render(ARTICLE.format(note=note))
    assert "loading placeholder" not in decision.reason, decision
