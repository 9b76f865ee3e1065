"""trafilatura's runs of one page (main content, then images), sharing what they have in common.

Both runs are `trafilatura.core.trafilatura_sequence` with comments off. Its first steps depend
only on the raw tree and the focus: the forum test, the raw-tree pruning (`RAW_TREE_PRUNE_XPATH`,
then the comment and list containers) and, for the recall escalation, the text length of the
pruned page (`html2txt`). After them the sequence only reads the pruned tree (every stage works on
a copy), so `RawTree` does them once and both runs read the same pruned tree. `sequence` is
trafilatura's sequence from that point on, for comments off; `SHARED` says whether the installed
trafilatura is the one it follows (else every run is trafilatura's own, unchanged).
"""

from __future__ import annotations

import copy
import functools
import logging

import trafilatura
from lxml.etree import strip_tags
from trafilatura.baseline import baseline, html2txt
from trafilatura.core import (
    ESCALATION_ACCEPT_RATIO,
    ESCALATION_JUSTEXT_RATIO,
    ESCALATION_MAX_LENGTH,
    ESCALATION_PAGE_SHARE,
    _extract_and_compare,
    _forum_thread_page,
    _prepare_tree,
    _recall_retry,
    bare_extraction,
    trafilatura_sequence,
)
from trafilatura.external import justext_rescue
from trafilatura.htmlprocessing import prune_unwanted_nodes
from trafilatura.settings import Document, Extractor
from trafilatura.xml import xmltotxt
from trafilatura.xpaths import (
    RAW_TREE_PRUNE_XPATH,
    REMOVE_COMMENTS_AND_LISTS_XPATH,
    REMOVE_COMMENTS_XPATH,
)

LOGGER = logging.getLogger(__name__)

# The trafilatura whose trafilatura_sequence `sequence` follows step for step
# (tests/extract/test_extract_cost.py compares the two on real-shaped pages).
FOLLOWED_VERSION = "2.3.1"
SHARED = trafilatura.__version__ == FOLLOWED_VERSION


class RawTree:
    """One page's raw tree (parse_html's, left as it is) and its pruned forms, made once."""

    def __init__(self, tree):
        self.tree = tree
        self._pruned: dict[bool, object] = {}
        self._page_len: dict[bool, int] = {}

    @functools.cached_property
    def is_forum(self) -> bool:
        """trafilatura's thread-forum test of the raw tree."""
        return _forum_thread_page(self.tree)

    def _prunes_comments(self, options: Extractor) -> bool:
        return not options.comments and (options.focus == "precision" or not self.is_forum)

    def pruned(self, options: Extractor):
        """The tree as trafilatura_sequence prunes it before its stages (read-only)."""
        key = self._prunes_comments(options)
        if key not in self._pruned:
            tree = prune_unwanted_nodes(copy.copy(self.tree), RAW_TREE_PRUNE_XPATH)
            if key:
                tree = prune_unwanted_nodes(tree, REMOVE_COMMENTS_AND_LISTS_XPATH)
            self._pruned[key] = tree
        return self._pruned[key]

    def page_len(self, options: Extractor) -> int:
        """len(html2txt(pruned tree)): the page measure of the recall escalation."""
        key = self._prunes_comments(options)
        if key not in self._page_len:
            self._page_len[key] = len(html2txt(self.pruned(options)))
        return self._page_len[key]


@functools.cache
def hashed_justext_stoplist() -> frozenset:
    """trafilatura's justext run on a page of no known language hands justext every language's
    stop words as one tuple (~150,000 words), and justext's `lru_cache`d `define_stoplist` then
    hashes and compares that tuple on every call: 11 ms a page, a quarter of import + extract
    on bench/import.py's pages. The same words as a frozenset hash once (a frozenset keeps its
    hash) and justext makes the same lower-cased set of them."""
    import trafilatura.external as external

    if not isinstance(external.JT_STOPLIST, frozenset):
        external.JT_STOPLIST = frozenset(external.JT_STOPLIST or external.jt_stoplist_init())
    return external.JT_STOPLIST


def sequence(raw: RawTree, options: Extractor, url: str | None):
    """(body, text) of `trafilatura_sequence(copy of raw.tree, options, url)` for comments off."""
    hashed_justext_stoplist()
    if options.comments:
        raise ValueError("sequence follows trafilatura_sequence for comments off only")
    if not SHARED:
        body, text, _, _ = trafilatura_sequence(copy.copy(raw.tree), options, url)
        return body, text
    tree = raw.pruned(options)
    cleaned_tree, cleaned_tree_backup = _prepare_tree(tree, options, url)
    if options.focus == "precision" and not raw.is_forum:
        cleaned_tree = prune_unwanted_nodes(cleaned_tree, REMOVE_COMMENTS_XPATH)

    postbody, temp_text = _extract_and_compare(cleaned_tree, cleaned_tree_backup, tree, options)

    if len(temp_text) < options.min_extracted_size and options.focus != "precision":
        b_body, b_text, b_len = baseline(tree)
        if b_len > len(temp_text):
            postbody, temp_text = b_body, b_text

    if (
        options.focus == "balanced"
        and 0 < len(temp_text) < ESCALATION_MAX_LENGTH
        and len(temp_text) < ESCALATION_PAGE_SHARE * raw.page_len(options)
    ):
        r_options = copy.copy(options)
        r_options.focus = "recall"
        r_text = ""
        try:
            r_body, r_text = _recall_retry(tree, r_options, url)
        except Exception as err:  # as trafilatura: a failed retry keeps the first result
            LOGGER.warning("recall retry failed: %s %s", err, url)
        j_text = ""
        if not options.fast:
            try:
                j_body, j_text = justext_rescue(copy.copy(tree), options)
            except Exception as err:
                LOGGER.warning("justext candidate failed: %s %s", err, url)
        len_text, r_len, j_len = len(temp_text), len(r_text), len(j_text)
        if j_len > r_len and j_len > ESCALATION_JUSTEXT_RATIO * len_text:
            postbody, temp_text = j_body, j_text
        elif r_len >= options.min_extracted_size and r_len > ESCALATION_ACCEPT_RATIO * len_text:
            postbody, temp_text = r_body, r_text
    return postbody, temp_text


def main_run(raw: RawTree, options: Extractor) -> Document | None:
    """`bare_extraction(raw.tree, options=options)` (python output, no metadata, comments off):
    the document with body and text, or None where trafilatura discards the page."""
    if not SHARED:
        return bare_extraction(raw.tree, options=options)
    try:
        postbody, temp_text = sequence(raw, options, options.url or None)
        if options.max_tree_size:
            if len(postbody) > options.max_tree_size:
                strip_tags(postbody, "hi")
            if len(postbody) > options.max_tree_size:
                raise ValueError
        if len(temp_text) < options.min_output_size and 0 < options.min_output_comm_size:
            raise ValueError
    except (TypeError, ValueError):
        return None
    document = Document()
    document.text = xmltotxt(postbody, options.formatting)
    document.raw_text = document.text
    document.body = postbody
    return document
