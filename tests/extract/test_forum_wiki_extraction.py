"""Forum and wiki pages: replies after a quote, signatures, wiki chrome, login walls, soft 404s.

Pages shaped as phpBB (prosilver) and MediaWiki write them, with prose unlike the sample web's.
"""

from __future__ import annotations

import pytest
from lxml import html as lxml_html

from crawlers.extract import extract_page
from crawlers.extract.prune import prune_chrome, unmark_repeated_frames, wrap_loose_text

REPLIES = [
    "Swapping the regulator fixed the flicker on mine, the old one had a cracked solder joint "
    "right under the heat sink, which you only see with a magnifier and a good torch.",
    "Check the earth strap between the frame and the engine block first, it corrodes where "
    "nobody looks and gives exactly these intermittent symptoms after rain.",
    "Mine did the same until I replaced the stator connector; the pins had browned from heat "
    "and the plastic housing had started to melt around the middle terminal.",
    "A cheap clamp meter tells you within a minute whether the charging current is steady, so "
    "measure before buying parts you might not need at all.",
    "The dealer wanted four hundred for a new harness, but cleaning every connector with "
    "contact spray and dielectric grease cost me an afternoon and twelve euros.",
    "Keep an eye on the battery voltage at idle afterwards; anything under thirteen volts with "
    "the headlight on means the problem is still there somewhere.",
]


def _post(i: int, body: str) -> str:
    return (
        f'<div id="p{100 + i}" class="post bg{i % 2 + 1}"><div class="inner">'
        f'<div class="postbody"><h3><a href="#p{100 + i}">Re: Headlight flicker at idle</a></h3>'
        f'<p class="author"><a href="./viewtopic.php?p={100 + i}">Post</a> by '
        f'<a href="./memberlist.php?u={i}" class="username">wrench{i}</a> &raquo; '
        f"Tue Apr 02, 2024 9:{10 + i} pm</p>"
        f'<div class="content">{body}</div>'
        f'<div id="sig{i}" class="signature">Twin shock forever -- wrench{i}, XJ600 owner '
        "since the last century</div></div>"
        f'<dl class="postprofile"><dt><a href="./memberlist.php?u={i}">wrench{i}</a></dt>'
        f"<dd><strong>Posts:</strong> {300 + i}</dd><dd><strong>Joined:</strong> 2019</dd></dl>"
        "</div></div>"
    )


def _frame(title: str, content: str) -> str:
    return (
        f'<!DOCTYPE html><html lang="en-gb"><head><meta charset="utf-8"><title>{title} - '
        'Old Bikes Board</title></head><body id="phpbb"><div id="wrap">'
        '<div class="headerbar"><h1>Old Bikes Board</h1><p>Carburettors and cables</p></div>'
        '<div class="navbar"><ul><li><a href="./index.php">Board index</a></li>'
        '<li><a href="./faq.php">FAQ</a></li><li><a href="./ucp.php?mode=register">Register</a>'
        '</li><li><a href="./ucp.php?mode=login">Login</a></li></ul></div>'
        f'<div id="page-body">{content}</div><div id="page-footer">Powered by phpBB '
        '<a href="./ucp.php?mode=delete_cookies">Delete cookies</a></div></div></body></html>'
    )


def thread_page() -> str:
    """Six posts; posts 1, 3 and 5 quote the post before and reply after the quote, as phpBB
    writes it: the reply is loose text (with <br>s) right after `</blockquote>`."""
    posts = []
    for i, reply in enumerate(REPLIES):
        body = reply.replace("; ", ";<br>")
        if i % 2:
            quoted = REPLIES[i - 1][:70]
            body = (
                f"<blockquote><div><cite>wrench{i - 1} wrote:</cite>{quoted}</div></blockquote>"
                + body
            )
        posts.append(_post(i, body))
    return _frame("Headlight flicker at idle", "".join(posts))


def record(html: str, url: str = "http://board.test/viewtopic.php?t=7") -> dict:
    return {"url": url, "status": 200, "body": html.encode(), "training_allowed": True}


def _words(text: str) -> str:
    return " ".join(text.split())


def test_every_reply_after_a_quote_is_kept():
    res = extract_page(record(thread_page()))
    text = _words(res.document["text"])
    for reply in REPLIES:
        assert _words(reply) in text


def test_first_post_frame_is_not_taken_for_the_whole_thread():
    # A long first post that quotes: trafilatura would take the first `div.content` alone.
    posts = [_post(0, "<blockquote><div>" + REPLIES[5] + "</div></blockquote>" + REPLIES[0])]
    posts += [_post(i, REPLIES[i]) for i in range(1, 6)]
    res = extract_page(record(_frame("Headlight flicker at idle", "".join(posts))))
    text = _words(res.document["text"])
    for reply in REPLIES:
        assert _words(reply) in text


def test_signatures_and_poster_profiles_are_not_text():
    text = extract_page(record(thread_page())).document["text"]
    assert "Twin shock forever" not in text
    assert "Joined:" not in text and "Posts:" not in text


def wiki_page() -> str:
    paras = [
        "The Hallstatt salt mine has been worked for about seven thousand years, and finds "
        "from its galleries include leather caps, wooden shovels and preserved textiles.",
        "Miners reached the salt through shafts cut into the mountain, and the brine later "
        "flowed to the evaporation pans in wooden pipes several kilometres long.",
        "Tourism began in the nineteenth century, when visitors slid down the wooden miners' "
        "slides that are still part of the guided tour today.",
    ]
    sections = "".join(
        f'<h2><span class="mw-headline" id="s{i}">Period {i}</span>'
        f'<span class="mw-editsection"><span class="mw-editsection-bracket">[</span>'
        f'<a href="/w/index.php?title=Hallstatt&amp;action=edit&amp;section={i}">edit</a>'
        f'<span class="mw-editsection-bracket">]</span></span></h2><p>{p}</p>'
        for i, p in enumerate(paras[1:], 1)
    )
    toc = (
        '<div id="toc" class="toc" role="navigation"><div class="toctitle"><h2>Contents</h2>'
        '</div><ul><li class="toclevel-1"><a href="#s1"><span class="tocnumber">1</span> '
        '<span class="toctext">Period 1</span></a></li></ul></div>'
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><title>Hallstatt salt mine - Wiki</title></head>'
        '<body><a class="mw-jump-link" href="#mw-head">Jump to navigation</a>'
        '<div id="content" class="mw-body"><h1 id="firstHeading">Hallstatt salt mine</h1>'
        '<div id="bodyContent"><div id="siteSub" class="noprint">From Wiki, the free '
        'encyclopedia</div><div id="mw-content-text"><div class="mw-parser-output">'
        f"<p>{paras[0]}</p>{toc}{sections}</div></div></div></div></body></html>"
    )


def test_wiki_edit_links_and_contents_box_are_not_text():
    text = extract_page(record(wiki_page(), "http://wiki.test/wiki/Hallstatt")).document["text"]
    assert "Hallstatt salt mine has been worked" in text
    assert "slides that are still part of the guided tour" in text
    assert "[edit]" not in text and "edit]" not in text
    assert "Contents" not in text and "Jump to navigation" not in text


def test_an_api_signature_is_no_forum_signature():
    tree = lxml_html.fromstring(
        '<div><p>Use it like this:</p><div class="signature"><code>open(path, mode)</code></div>'
        '<span class="signature">read(size=-1)</span><div class="signature">bye, Tom</div></div>'
    )
    assert prune_chrome(tree) == 1
    assert "open(path, mode)" in tree.text_content() and "read(size=-1)" in tree.text_content()
    assert "bye, Tom" not in tree.text_content()


def test_loose_text_beside_blocks_is_wrapped_and_inline_only_containers_are_left():
    tree = lxml_html.fromstring(
        "<div><div id='a'><blockquote>quoted</blockquote>reply <b>bold</b> one<br>two"
        "<ul><li>item</li></ul>after <a href='#'>link</a></div>"
        "<div id='b'>only <i>inline</i> text<br>here</div>"
        "<div id='c'><p>para</p>loose words<table><tr><td>x</td></tr></table>"
        "<a href='#'>menu</a> <a href='#'>links</a></div></div>"
    )
    made = wrap_loose_text(tree)
    a, b, c = (tree.get_element_by_id(x) for x in "abc")
    assert [el.tag for el in a] == ["blockquote", "div", "ul", "div"]
    assert a[1].text_content() == "reply bold onetwo" and a[1].find("br") is not None
    assert a[3].text_content() == "after link"
    assert [el.tag for el in b] == ["i", "br"]  # no block beside it: trafilatura reads it
    # beside a paragraph, a paragraph; link texts alone are a menu, left as they are
    assert [el.tag for el in c] == ["p", "p", "table", "a", "a"]
    assert made == 3


def test_repeated_frames_lose_the_class_a_single_or_nested_one_keeps_it():
    tree = lxml_html.document_fromstring(
        '<body><div class="content">one</div><div class="content">two</div>'
        '<article class="entry"><div class="entry">inner</div></article>'
        '<section class="post">alone</section></body>'
    )
    assert unmark_repeated_frames(tree) == 2
    assert [el.get("class") for el in tree.body.iter("div", "article", "section")] == [
        "refinery-repeated",
        "refinery-repeated",
        "entry",
        "entry",
        "post",
    ]


def login_page(why: str, title: str = "Login") -> str:
    return _frame(
        title,
        f'<h2>Login</h2><p>{why}</p><form action="./ucp.php?mode=login" method="post">'
        '<fieldset><label for="u">Username:</label><input id="u" name="username">'
        '<label for="pw">Password:</label><input id="pw" type="password" name="password">'
        '<input type="submit" value="Login"></fieldset></form>',
    )


@pytest.mark.parametrize(
    "why",
    [
        "The board requires you to be registered and logged in to view this forum.",
        "You need to login in order to reply to topics within this forum.",
        "Sorry but you are not permitted to use the search system.",
        "Sie müssen sich anmelden, um Beiträge zu verfassen.",
    ],
)
def test_a_login_form_page_is_rejected_as_a_login_wall(why):
    res = extract_page(record(login_page(why), "http://board.test/posting.php?mode=quote&p=3"))
    assert res.document is None
    assert res.reject["reason"] == "login_wall"
    assert res.reject["training_allowed"] is True  # the crawl's flag, as for every reject


@pytest.mark.parametrize(
    ("title", "notice"),
    [
        ("Information", "The requested topic does not exist."),
        ("Information", "Das angeforderte Thema existiert nicht."),
        ("Page not found", "Sorry, we could not find that."),
        ("404", "Nothing to see here."),
        ("Página no encontrada", "Lo sentimos."),
    ],
)
def test_a_not_found_notice_answered_with_200_is_a_soft_404(title, notice):
    page = _frame(title, f'<h2>{title}</h2><p>{notice}</p><a href="./index.php">Return</a>')
    res = extract_page(record(page, "http://board.test/viewtopic.php?t=901"))
    assert res.document is None
    assert res.reject["reason"] == "soft_404"


def test_articles_that_mention_not_found_or_log_in_stay_documents():
    article = (
        "<p>When the loader reports that a module was not found, the cause is usually a path "
        "problem: the interpreter searches the directories listed in its path, in order, and "
        "stops at the first match. A file that does not exist in any of them is reported.</p>"
        "<p>Virtual environments make this worse when the shell still points at the system "
        "interpreter, so check which executable runs before reinstalling anything.</p>"
    )
    page = (
        "<html><head><title>Module not found errors explained</title></head><body>"
        f"<article><h1>Module not found errors explained</h1>{article}</article>"
        '<aside><form><input name="u"><input type="password" name="p">'
        "<p>Please log in to comment.</p></form></aside></body></html>"
    )
    res = extract_page(record(page, "http://blog.test/module-not-found"))
    assert res.document is not None, res.reject
    # a short forum post titled like a notice, with the board's quick login beside it
    post = _post(0, "Can't log in since the update, the page just reloads. Anyone else?")
    quick = '<form><input name="username"><input type="password" name="password"></form>'
    res = extract_page(record(_frame("Login problems after update", post + quick)))
    assert res.document is not None, res.reject
    assert "Can't log in since the update" in res.document["text"]
