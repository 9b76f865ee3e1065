"""trafilatura's justext fallback looks its all-language stop list up in O(1), with the same
words: the tuple it builds cost justext's lru_cache a hash and compare of ~150,000 words a page."""

from __future__ import annotations

import trafilatura.external as external
from justext.core import define_stoplist
from lxml.html import fromstring

PAGE = (
    "<html><body><nav>Home | About | Contact</nav><div><p>"
    + "This paragraph is long enough for justext to call it good, with the usual words of a "
    "sentence in it, again and again. " * 4 + "</p></div><footer>Copyright</footer></body></html>"
)


def test_the_stoplist_is_hashed_once_and_keeps_every_word():
    from crawlers.extract.page import extract_page

    words = external.JT_STOPLIST or external.jt_stoplist_init()
    as_tuple = tuple(sorted(words))
    record = {"url": "http://127.0.0.2/p", "status": 200, "content_type": "text/html"}
    assert extract_page({**record, "body": PAGE.encode()}).document is not None
    stoplist = external.JT_STOPLIST  # what an extraction leaves for justext
    assert isinstance(stoplist, frozenset) and stoplist == frozenset(as_tuple)
    assert define_stoplist(stoplist) == define_stoplist(as_tuple)
    # justext keeps the same paragraphs with either
    a = external.try_justext(fromstring(PAGE), None, None)
    external.JT_STOPLIST = as_tuple
    try:
        b = external.try_justext(fromstring(PAGE), None, None)
    finally:
        external.JT_STOPLIST = stoplist
    assert [p.text for p in a] == [p.text for p in b] and len(a) == 1
