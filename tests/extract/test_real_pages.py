"""Pages shaped like the real ones that broke extraction (issue 24), written here, none copied.

XHTML pages that start with `<?xml ... encoding=...?>`, control characters in the text, a
`<meta charset=iso-8859-1>` on UTF-8 bytes, Chinese/Japanese/Korean pages without any charset
declaration whose markup outweighs their text, labels browsers widen (gb2312 -> GBK, iso-8859-1 ->
windows-1252), comment sections, and image captions that plain trafilatura leaves out of the text.
"""

from __future__ import annotations

import pytest

from crawlers.extract import extract_page
from crawlers.extract.decode import choose_encoding, decode_html

URL = "http://127.0.0.9:8000/news/2024/story.html"

EN = (
    "The city council approved the new budget on Tuesday after a long debate about public "
    "transport, housing and the renovation of the central library, which has been closed since "
    "the storm damaged its roof two winters ago. "
)
DE = (
    "Die Stadtverwaltung hat am Dienstag den neuen Haushalt beschlossen. Größere Summen fließen "
    "in den öffentlichen Nahverkehr, in Wohnungen und in die Sanierung der Bücherei, die seit dem "
    "Sturm geschlossen ist. Über die Höhe der Gebühren wird später entschieden. "
)
ZH = (
    "北京时间昨天晚上，国家统计局发布了最新的经济数据。数据显示，今年前三个季度国内生产总值同比增长，"
    "消费对经济增长的贡献率继续提高。专家认为，随着一系列稳增长政策的落地见效，经济运行总体平稳。"
)
ZHT = "臺北市政府今天宣布，將在明年推動一系列交通改善計畫，包括增設公車專用道、延長捷運營運時間以及擴大自行車道網絡。"
JA = "東京都は昨日、来年度から新しい子育て支援制度を始めると発表しました。保育園の利用料が大幅に引き下げられます。"
KO = (
    "서울시는 오늘 새로운 교통 정책을 발표했습니다. 이 정책은 대중교통 이용을 늘리기 위한 것입니다."
)


def page(text: str, *, head: str = "", title: str = "Budget approved", extra: str = "") -> str:
    return (
        f"<html><head>{head}<title>{title}</title></head><body>"
        '<div class="nav"><a href="/">Home</a> <a href="/news">News</a></div>'
        f"<article><h1>{title}</h1><p>{text}</p><p>{text}</p><p>{text}</p>{extra}</article>"
        '<div class="footer">Contact us</div></body></html>'
    )


def heavy_page(text: str, title: str) -> str:
    """A page whose markup and scripts outweigh its (short) text many times over."""
    links = "".join(
        f'<li class="menu-item-{i}"><a href="/section/{i}?ref=top" class="lnk">section {i}</a></li>'
        for i in range(900)
    )
    script = "<script>" + "".join(f"var v{i} = 'x{i}abcdef';" for i in range(1500)) + "</script>"
    return (
        f"<html><head><title>{title}</title>{script}</head><body><ul class=nav>{links}</ul>"
        f'<div class="content"><h1>{title}</h1><p>{text}</p></div><ul class=foot>{links}</ul>'
        "</body></html>"
    )


def extract(body: bytes, content_type: str | None = None, **over) -> dict:
    res = extract_page(
        {"url": URL, "status": 200, "body": body, "content_type": content_type, **over}
    )
    assert res.reject is None, res.reject
    return res.document


@pytest.mark.parametrize("encoding", ["UTF-8", "utf-8", "iso-8859-1"])
def test_xhtml_with_an_xml_declaration_is_parsed(encoding):
    decl = f'<?xml version="1.0" encoding="{encoding}" ?>\r\n'
    body = (decl + page(DE)).encode("utf-8" if encoding.lower() == "utf-8" else "cp1252")
    doc = extract(body)
    assert "Größere Summen fließen" in doc["text"]
    assert not decode_html(body).lstrip().startswith("<?xml")


def test_rendered_html_with_an_xml_declaration_is_parsed():
    html = '<?xml version="1.0" encoding="utf-8"?>' + page(EN)
    doc = extract(None, rendered_html=html, rendered=True)
    assert "renovation of the central library" in doc["text"]


def test_control_characters_in_the_text_do_not_lose_the_page():
    text = (
        EN.replace("budget", "budget\x0b")
        .replace("debate", "\x07debate")
        .replace("library", "library\x1d")
    )
    body = page(text, head='<meta charset="utf-8">').encode()
    doc = extract(body)
    assert "central library" in doc["text"] and "new budget" in doc["text"]
    assert not any(c in doc["text"] for c in "\x0b\x07\x1d")


@pytest.mark.parametrize(
    ("head", "content_type"),
    [
        ('<meta charset="iso-8859-1">', None),
        ('<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">', None),
        ("", "text/html; charset=iso-8859-1"),
        ('<meta charset="windows-1252">', "text/html"),
    ],
)
def test_utf8_bytes_beat_a_single_byte_label(head, content_type):
    body = page(DE, head=head).encode("utf-8")
    doc = extract(body, content_type)
    assert "Größere Summen fließen" in doc["text"] and "Ã" not in doc["text"]


def test_a_true_single_byte_label_is_kept_and_read_as_browsers_do():
    # iso-8859-1 means windows-1252 to a browser: 0x84/0x93 are German quotes, not controls.
    body = page(DE + "Er sagte: \u201eWir bauen.\u201c", head='<meta charset="iso-8859-1">').encode(
        "cp1252"
    )
    assert choose_encoding(body) == ("cp1252", "page")
    doc = extract(body)
    assert "\u201eWir bauen.\u201c" in doc["text"] and "Größere" in doc["text"]
    ru = "Городской совет утвердил новый бюджет после долгих споров о транспорте и жилье. " * 3
    doc = extract(page(ru, head='<meta charset="windows-1251">').encode("cp1251"))
    assert "Городской совет утвердил" in doc["text"]


@pytest.mark.parametrize(
    ("encoding", "text", "title"),
    [
        ("gbk", ZH, "经济数据发布"),
        ("gb18030", ZH, "经济数据发布"),
        ("big5", ZHT, "交通改善計畫"),
        ("shift_jis", JA, "子育て支援制度"),
        ("euc_jp", JA, "子育て支援制度"),
        ("euc_kr", KO, "교통 정책"),
    ],
    ids=["gbk", "gb18030", "big5", "shift_jis", "euc_jp", "euc_kr"],
)
def test_undeclared_cjk_page_is_detected_from_its_text_not_its_markup(encoding, text, title):
    body = heavy_page(text, title).encode(encoding)
    assert b"charset" not in body
    html = decode_html(body)
    assert text in html and title in html


def test_a_narrow_cjk_label_is_widened_and_a_stray_byte_does_not_lose_the_page():
    # "gb2312" pages use GBK characters (镕 is GBK, not GB2312); one cut character at the end.
    text = ZH + "朱镕基"
    body = page(text, head='<meta charset="gb2312">', title="经济数据").encode("gbk") + b"\xd6"
    assert choose_encoding(body)[0] == "gb18030"
    doc = extract(body)
    assert "朱镕基" in doc["text"] and "国家统计局发布了最新的经济数据" in doc["text"]


def test_a_declared_cjk_charset_wins_over_a_wrong_detection():
    body = page(ZH[:30], head='<meta http-equiv="Content-Type" content="text/html; charset=GBK">')
    doc = extract(body.encode("gbk"))
    assert ZH[:30] in doc["text"]


def test_comments_are_kept_apart_from_the_main_text():
    comments = (
        '<section id="comments" class="comments-area"><h2>3 comments</h2><ol class="comment-list">'
        '<li class="comment"><div class="comment-body"><p>Great news for the library, finally '
        "someone is listening to readers.</p></div></li>"
        '<li class="comment"><div class="comment-body"><p>What about the bus lines in the north '
        "of town? Nobody mentions them.</p></div></li></ol></section>"
    )
    html = (
        '<html><head><meta charset="utf-8"><title>Budget</title></head><body>'
        f"<article><h1>Budget approved</h1><p>{EN * 2}</p><p>{EN}</p></article>"
        f"{comments}</body></html>"
    )
    doc = extract(html.encode())
    assert "central library" in doc["text"]
    for out in (doc["text"], doc["markdown"]):
        assert "someone is listening to readers" not in out
        assert "bus lines in the north" not in out
    assert "someone is listening to readers" in doc["comments"]
    assert "bus lines in the north" in doc["comments"]
    assert "central library" not in doc["comments"]


def test_a_page_without_comments_has_an_empty_comments_column():
    assert extract(page(EN).encode())["comments"] == ""


def test_image_captions_stay_with_the_image_not_in_the_text():
    extra = (
        '<div class="image"><img src="/img/council.jpg" alt="The council">'
        "Photo: City press office</div>"
    )
    res = extract_page(
        {"url": URL, "status": 200, "body": page(EN, extra=extra + f"<p>{DE}</p>").encode()}
    )
    doc = res.document
    assert "Photo: City press office" not in doc["text"]
    assert "![The council](http://127.0.0.9:8000/img/council.jpg)" in doc["markdown"]
    assert [r["src"] for r in res.image_refs] == ["http://127.0.0.9:8000/img/council.jpg"]
    assert "Größere Summen" in doc["text"]


def test_images_are_placed_into_the_main_content_of_the_plain_run():
    from lxml import etree

    from crawlers.extract.content import interleave, place_images

    body = etree.fromstring(
        "<body><head>Title</head><p>First block.</p><p>Kelp forests shelter otters.</p>"
        "<list><item>One</item><item>Two</item></list></body>"
    )
    imaged = etree.fromstring(
        '<body><graphic src="lead.jpg"/><head>Title</head><p>First block.</p>'
        '<graphic src="mid.jpg"/>Photo: agency<p>Teaser that is not main content.</p>'
        '<graphic src="teaser.jpg"/><p>Kelp forests <graphic src="kelp.png"/> shelter otters.</p>'
        '<list><item>One</item><item>Two</item></list><p>Footer links</p><graphic src="footer.png"/>'
        "</body>"
    )
    blocks = interleave(place_images(body, imaged), "http://127.0.0.9/a/")
    assert [(b["kind"], b["text"] or b["src"]) for b in blocks] == [
        ("image", "http://127.0.0.9/a/lead.jpg"),  # leads: before the first main block
        ("text", "Title"),
        ("text", "First block."),
        ("image", "http://127.0.0.9/a/mid.jpg"),  # after its main block; its caption stays out
        # after text that is not main content: before the next main block
        ("image", "http://127.0.0.9/a/teaser.jpg"),
        ("text", "Kelp forests"),
        ("image", "http://127.0.0.9/a/kelp.png"),  # inline, as in the imaged run
        ("text", "shelter otters."),
        ("text", "- One - Two"),
    ]  # footer.png follows only text that is not main content: dropped
    assert place_images(body, None) is not body and etree.tostring(
        place_images(body, None)
    ) == etree.tostring(body)


def test_a_page_of_a_few_words_is_a_document_but_a_bare_menu_is_not():
    doc = extract(b"<!DOCTYPE html><html><head></head><body>\n  Test\n</body></html>")
    assert doc["text"] == "Test" and doc["markdown"] == "Test"
    res = extract_page(
        {"url": URL, "status": 200, "body": b"<html><body><nav>menu</nav></body></html>"}
    )
    assert res.reject["reason"] == "no_main_content"


def test_commented_out_markup_does_not_split_or_join_the_text():
    # trafilatura's own parser drops HTML comments; a tree that keeps them loses paragraphs
    text = EN.replace("public transport", "public <!-- ad slot --> transport")
    doc = extract(page(text, head='<meta charset="utf-8">').encode())
    assert "debate about public transport, housing" in doc["text"]
    assert "ad slot" not in doc["text"]


def test_a_comment_section_with_only_its_label_gives_no_comments():
    html = (
        '<html><head><meta charset="utf-8"><title>Budget</title></head><body>'
        f"<article><h1>Budget approved</h1><p>{EN * 2}</p><p>{EN}</p></article>"
        '<div id="comments" class="comments-area"><h3>Leave a reply</h3></div></body></html>'
    )
    assert extract(html.encode())["comments"] == ""


def test_a_byte_order_mark_comes_first():
    html = page(DE, head='<meta charset="iso-8859-1">')
    assert choose_encoding(b"\xef\xbb\xbf" + html.encode())[0] == "utf-8"
    body = b"\xff\xfe" + html.encode("utf-16-le")  # UTF-16 is half NUL bytes, yet text
    assert choose_encoding(body) == ("utf-16-le", "bom")
    assert "Größere Summen fließen" in extract(body, "text/html; charset=iso-8859-1")["text"]


def test_images_of_a_short_page_kept_as_one_baseline_block_follow_it_in_order():
    from lxml import etree

    from crawlers.extract.content import interleave, place_images

    # trafilatura keeps a short gallery page as one paragraph (navigation included)
    body = etree.fromstring("<body><p>Home | About Photo collection 1 Collection of 3.</p></body>")
    imaged = etree.fromstring(
        '<body><head>Photo collection 1</head><p>Collection of 3.</p><graphic src="1.png"/>'
        '<graphic src="2.png"/><p>Collection of 3.</p><graphic src="3.png"/></body>'
    )
    blocks = interleave(place_images(body, imaged), "http://127.0.0.9/")
    assert [b["src"] or b["text"] for b in blocks] == [
        "Home | About Photo collection 1 Collection of 3.",
        "http://127.0.0.9/1.png",
        "http://127.0.0.9/2.png",
        "http://127.0.0.9/3.png",
    ]


def forum_page(text: str) -> str:
    """A phpBB-like page as saved pages come: a UTF-8 head, the post, a NUL-padded profile field
    in a script and a footer; some servers pad the whole response with NUL bytes."""
    return (
        '<!DOCTYPE html><html dir="ltr" lang="de"><head><meta charset="utf-8">'
        "<title>Haushalt beschlossen - Forum</title>"
        '<script>var phpbb = {user: "gast\x00\x00\x00", sid: "58428beaa1"};</script></head>'
        '<body id="phpbb"><div class="navbar"><a href="./index.php">Foren-Übersicht</a></div>'
        f'<div class="post"><h3>Haushalt</h3><div class="content">{text}<br>{text}<br>{text}'
        '</div></div><div class="copyright">Powered by phpBB\x00</div></body></html>'
    )


@pytest.mark.parametrize("padding", [b"", b"\x00" * 2048], ids=["stray", "padded"])
def test_stray_and_padding_nul_bytes_do_not_make_a_page_binary(padding):
    body = forum_page(DE).encode("utf-8") + padding
    doc = extract(body, "text/html; charset=UTF-8")
    assert "Größere Summen fließen" in doc["text"] and "\x00" not in doc["text"]


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_byte_order_mark_is_read_from_its_nul_pattern(codec):
    body = page(DE, head='<meta charset="utf-16">').encode(codec)
    assert choose_encoding(body, "text/html; charset=utf-16")[0] == codec
    assert "Größere Summen fließen" in extract(body, "text/html")["text"]


@pytest.mark.parametrize(
    "body",
    [
        b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 8,  # an MP4 (no magic we know)
        b"\x00\x01\x00\x00\x00\x0f\x00\x80\x00\x03" + bytes(range(200)) * 10,  # a TrueType font
        bytes([0, 0, 1, 0xBA]) + b"\x00\x12\x00\x00abc" * 300,  # MPEG program stream
    ],
    ids=["mp4", "ttf", "mpeg"],
)
def test_binary_bodies_without_known_magic_are_still_refused(body):
    res = extract_page({"url": URL, "status": 200, "body": body, "content_type": "text/html"})
    assert res.reject is not None and res.reject["reason"] == "binary_body", res
