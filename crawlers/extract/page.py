"""One crawl record in, one document (with its images, tables and interleaved form) or one reject out."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from lxml import etree
from lxml import html as lxml_html

from common.consent import flag_true
from common.schemas import PROVENANCE
from crawlers.extract.content import extract_content, image_refs, parse_html
from crawlers.extract.decode import BadPage, clean_text, decode_html
from crawlers.extract.prune import prepare_tree
from crawlers.extract.reject import notice_reject
from crawlers.extract.tables import extract_tables

# Crawl-record fields that travel unchanged to every document (robots decisions included).
CARRIED_FIELDS = (
    "crawl_allowed",
    "robots_crawl",
    "robots_training",
    "noindex",
    "nofollow",
    "noai",
    "noimageai",
    "status",
    "content_sha256",
)


@dataclass
class ExtractConfig:
    """Knobs of static extraction; the defaults are the pipeline's."""

    max_body_bytes: int = 8_000_000
    max_elements: int = 200_000
    favor: str = "balanced"  # balanced | precision | recall (trafilatura's modes)
    llm: Any = None  # a crawlers.extract.llm.LLMExtractor, or None for trafilatura only
    # Product tokens whose meta robots tags the page's own HTML is read for (`_meta_opt_outs`).
    agent: str = "RefineryBot"
    training_agent: str = "RefineryBot-Extended"


@dataclass
class ExtractResult:
    """What one page yields: a document row and its children, or a reject row."""

    document: dict | None = None
    reject: dict | None = None
    image_refs: list[dict] = field(default_factory=list)
    tables: list[dict] = field(default_factory=list)
    interleaved: dict | None = None


def doc_id(url: str) -> str:
    """Stable document id: the first 16 hex digits of sha256(url)."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]


def _reject(record: dict, reason: str, detail: str) -> ExtractResult:
    url = str(record.get("url") or "")
    try:
        status = int(record["status"]) if record.get("status") is not None else None
    except (TypeError, ValueError):
        status = None  # the reject row must stay writable whatever the record holds
    return ExtractResult(
        reject={
            "id": doc_id(url),
            "url": url,
            "reason": reason,
            "detail": detail,
            "status": status,
            "training_allowed": flag_true(record.get("training_allowed")),
        }
    )


def _check_record(record: dict) -> None:
    if record.get("crawl_allowed") is False:
        raise BadPage("robots_denied", "robots.txt denied the crawl, so the page was never fetched")
    if record.get("duplicate_of"):
        raise BadPage(
            "duplicate_url", f"same URL as an earlier pages row ({record['duplicate_of']})"
        )
    if record.get("warc_error"):
        raise BadPage("warc_unreadable", str(record["warc_error"]))
    status = record.get("status")
    if status is None:
        detail = record.get("error") or "no HTTP status and no stored response"
        raise BadPage("fetch_error", str(detail))
    if int(status) != 200:
        target = f" to {record['redirect_to']}" if record.get("redirect_to") else ""
        raise BadPage(
            "http_status", f"HTTP status {status}{target}; only 200 responses become documents"
        )
    error = str(record.get("error") or "")
    if error.startswith("unwanted-content-type"):  # the crawler stored headers, not the body
        raise BadPage("not_html", f"crawl error {error!r}: the body was not downloaded")
    if record.get("body_reject"):  # set by crawl_io: truncated, too_large, decode_error, ...
        raise BadPage(str(record["body_reject"]), str(record.get("body_reject_detail") or ""))
    if error.startswith("body-too-large"):  # the crawler stopped reading: the body is partial
        raise BadPage("truncated", f"crawl error {error!r}: the stored body is not the whole page")
    if error.startswith("decode-error"):
        reason = "too_large" if "exceeds" in error else "decode_error"
        raise BadPage(reason, f"crawl error {error!r}")


def extract_page(record: dict, config: ExtractConfig | None = None) -> ExtractResult:
    """Extract one crawl record (pages row + `body` bytes, optional `rendered_html`).

    Never raises: every page yields exactly one document or one reject (pages in = documents +
    rejects). A bad page is rejected with its BadPage reason; any other error on this page
    (a bug, or input the libraries choke on) is rejected as `extract_error` naming the exception.
    """
    config = config or ExtractConfig()
    try:
        result = _extract(record, config)
        where = _unencodable(result)
        if where is not None:  # no Parquet file can hold it: the whole output would fail
            raise BadPage(
                "extract_error",
                f"a string of its {where} row is not valid Unicode (a lone surrogate), so the "
                "page's rows cannot be written; the run went on",
            )
        return result
    except BadPage as bad:
        return _reject(record, bad.reason, bad.detail)
    except Exception as exc:  # one page must never end the run
        return _reject(
            record,
            "extract_error",
            f"{type(exc).__name__}: {exc}"[:2000]
            + " (unexpected error while extracting this page; the run went on)",
        )


def _strings(value: Any):
    """Every string inside nested dicts and lists."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _unencodable(result: ExtractResult) -> str | None:
    """The first row (`document`, `image_refs[2]`) of an ExtractResult holding a string UTF-8
    cannot encode, or None."""
    for name in ("document", "image_refs", "tables", "interleaved"):
        rows = getattr(result, name)
        for i, row in enumerate(rows if isinstance(rows, list) else [rows]):
            try:
                "".join(_strings(row)).encode("utf-8")
            except UnicodeEncodeError:
                return f"{name}[{i}]" if isinstance(rows, list) else name
    return None


# Rendered text replaces the static extraction only when it adds at least this much main content
# (text_weight: characters without spaces, CJK double) and more than it loses.
MIN_RENDER_GAIN = 40


# What tree.iter() yields (elements, comments, processing instructions), counted without a Python
# object per node.
_COUNT_NODES = etree.XPath(
    "count(descendant-or-self::*|descendant::comment()|descendant::processing-instruction())"
)


def _parse(html: str, config: ExtractConfig):
    """The page's tree as trafilatura parses it (one parse serves trafilatura, the tables and the
    page's own opt-outs), and whether trafilatura can read it: where it sees no HTML document,
    the tree of lxml's own parser (for the opt-outs), and there is no main content."""
    tree, readable = parse_html(html), True
    if tree is None:
        readable = False
        try:
            tree = lxml_html.fromstring(clean_text(html))
        except (etree.ParserError, ValueError) as exc:
            raise BadPage("unparseable_html", str(exc) or "lxml found no document") from exc
    n_elements = int(_COUNT_NODES(tree))
    if n_elements > config.max_elements:
        raise BadPage(
            "dom_too_large", f"{n_elements} elements, above the {config.max_elements} limit"
        )
    return tree, readable


def _content(html: str, url: str, config: ExtractConfig):
    """(tree, content, opt-outs) of one HTML text: content None where trafilatura finds none;
    the opt-outs read before extraction prunes the tree (a meta robots counts wherever it is),
    forum and wiki chrome pruned and loose text made paragraphs before (`prune.prepare_tree`)."""
    tree, readable = _parse(html, config)
    opt_outs = _meta_opt_outs(tree, config)
    content = None
    if readable:
        prepare_tree(tree)
        content = extract_content(html, url, favor=config.favor, tree=tree)
    return tree, content, opt_outs


def _lines(text: str) -> list[str]:
    return [" ".join(line.split()).lower() for line in text.splitlines() if line.strip()]


_UNIT = re.compile(r"[^\s\u3001\u3002\uff01\uff0c\uff1a\uff1b\uff1f]+")


def render_gain(static_text: str, rendered_text: str) -> tuple[int, int]:
    """(added, lost): weight of the rendered extraction's words the static one lacks, and of the
    static words the rendered one lacks (as multisets: how lines break, e.g. a row of tab
    buttons joining a heading to its paragraph in one extraction and not the other, does not
    count). Loading notes ("Loading... Please wait!") are no text on either side."""
    from collections import Counter

    from crawlers.render.decide import is_loading_text, text_weight

    def units(text: str) -> Counter:
        lines = [x for x in _lines(text) if not is_loading_text(x)]
        return Counter(_UNIT.findall(" ".join(lines)))

    s_units, r_units = units(static_text), units(rendered_text)
    added = sum(text_weight(w) * n for w, n in (r_units - s_units).items())
    lost = sum(text_weight(w) * n for w, n in (s_units - r_units).items())
    return added, lost


def _rendered_size_check(html: str, max_bytes: int) -> None:
    """The rendered DOM is held to the static body's byte limit (its UTF-8 size)."""
    limit = f"above the {max_bytes}-byte limit (ExtractConfig.max_body_bytes)"
    if len(html) > max_bytes:  # no character is less than a byte: no need to encode it
        raise BadPage("too_large", f"rendered DOM has {len(html)} characters, {limit}")
    size = len(html.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise BadPage("too_large", f"rendered DOM is {size} bytes, {limit}")


def _merge_render(record: dict, static_html: str | None, config: ExtractConfig):
    """(record, html, tree, content, opt-outs) from the rendered DOM, or from the static HTML
    when the render adds no main content (a script navigated away, left a loading note, or
    changed nothing) or is rejected (too large): rendered text is kept only when it adds main
    content to the static extraction."""
    url, rendered = record["url"], record["rendered_html"]
    r_bad = None
    try:
        _rendered_size_check(rendered, config.max_body_bytes)
        rendered = clean_text(rendered)
        r_tree, r_content, r_opt_outs = _content(rendered, url, config)
    except BadPage as bad:
        if static_html is None:
            raise
        r_bad, r_tree, r_content, r_opt_outs = bad, None, None, None
    if static_html is None:
        return record, rendered, r_tree, r_content, r_opt_outs
    s_tree, s_content, s_opt_outs = _content(static_html, url, config)
    if s_content is None and r_content is None:
        if r_bad is not None:  # the static page has no main content either: the render's reason
            raise r_bad
        return record, rendered, r_tree, r_content, r_opt_outs
    if s_content is None:
        added, lost = render_gain("", r_content.text)
    elif r_content is None:
        added, lost = 0, 0
    else:
        added, lost = render_gain(s_content.text, r_content.text)
    if r_content is not None and added >= MIN_RENDER_GAIN and added > lost:
        # an opt-out the static HTML states holds for the page too
        return _page_opt_outs(record, s_opt_outs), rendered, r_tree, r_content, r_opt_outs
    if s_content is None:
        raise BadPage("no_main_content", "trafilatura found no main content (static or rendered)")
    note = f"static kept: the render added {added} and lost {lost} chars of main content"
    if r_bad is not None:
        note = f"static kept: the rendered DOM was rejected ({r_bad.reason}: {r_bad.detail})"
    reason = "; ".join(x for x in (record.get("render_reason"), note) if x)
    kept = {**record, "rendered": False, "render_reason": reason}
    if r_opt_outs is not None:  # an opt-out the rendered DOM states still holds for the page
        kept = _page_opt_outs(kept, r_opt_outs)
    return kept, static_html, s_tree, s_content, s_opt_outs


def _extract(record: dict, config: ExtractConfig) -> ExtractResult:
    url = record["url"]
    _check_record(record)
    static_html = None
    if not record.get("rendered_html") or record.get("body") is not None:
        try:
            static_html = decode_html(
                record.get("body"), record.get("content_type"), max_bytes=config.max_body_bytes
            )
        except BadPage:
            if not record.get("rendered_html"):
                raise
    if record.get("rendered_html"):
        record, html, tree, content, opt_outs = _merge_render(record, static_html, config)
    else:
        html = static_html
        tree, content, opt_outs = _content(html, url, config)
    record = _page_opt_outs(record, opt_outs)
    if content is None:
        raise BadPage("no_main_content", "trafilatura found no main content")
    notice = notice_reject(tree, content.text)
    if notice is not None:  # a 200 page that only says it cannot be shown: no document
        raise BadPage(*notice)
    method, llm_error = "trafilatura", None
    if config.llm is not None and config.llm.applies_to(url):
        try:
            item = config.llm.item(record, doc_id(url))  # only a consented page is sent
            content.markdown = config.llm.extract(html, url, item)
            content.text = config.llm.plain_text(content.markdown)
            method = "llm"
        except Exception as exc:  # the teacher is optional: keep trafilatura's output, record why
            llm_error = f"{type(exc).__name__}: {exc}"
    return _result(record, content, tree, method, llm_error)


def _meta_opt_outs(tree, config: ExtractConfig):
    """The opt-outs (`crawlers.crawl.html.Directives`) the page's HTML states itself: meta robots
    for every agent or our tokens, http-equiv X-Robots-Tag (`apply_meta_robots`), wherever the
    <meta> stands."""
    from crawlers.crawl.html import Directives, apply_meta_robots

    d = Directives()
    for meta in tree.iter("meta"):
        apply_meta_robots(
            d,
            meta.get("name") or "",
            meta.get("content") or "",
            config.agent,
            config.training_agent,
            meta.get("http-equiv") or "",
        )
    return d


def _page_opt_outs(record: dict, d) -> dict:
    """The record with the opt-outs `d` the extracted HTML states itself (`_meta_opt_outs`): a
    rendered DOM or an imported page can say noai where the crawl record does not. Opt-outs are
    only added, never removed; noai also takes training_allowed away. `d` None: no HTML read."""
    if d is None or not (d.noai or d.noimageai):
        return record
    out = dict(record)
    out["noai"] = bool(record.get("noai")) or d.noai
    out["noimageai"] = bool(record.get("noimageai")) or d.noimageai
    if d.noai:
        out["training_allowed"] = False
    return out


def _result(record: dict, content, tree, method: str, llm_error: str | None) -> ExtractResult:
    url = record["url"]
    did = doc_id(url)
    # Consent: the crawl's flag only when it is the boolean true (common.consent), and no noai.
    allowed = flag_true(record.get("training_allowed")) and not record.get("noai")
    document = {
        "id": did,
        "url": url,
        "host": urlsplit(url).hostname or "",
        "text": content.text,
        "markdown": content.markdown,
        "comments": content.comments,
        "title": content.title,
        "author": content.author,
        "date": content.date,
        "sitename": content.sitename,
        "canonical_url": content.canonical_url,
        "lang_hint": content.lang_hint,
        "rendered": bool(record.get("rendered")),
        "render_reason": record.get("render_reason") or "",
        "render_error": record.get("render_error"),
        "extraction_method": method,
        "llm_error": llm_error,
        "training_allowed": allowed,
        **{k: record.get(k) for k in CARRIED_FIELDS},
        "fetched_at": str(record["fetched_at"]) if record.get("fetched_at") is not None else None,
        **{k: record.get(k) for k in PROVENANCE},
    }
    refs = [
        {"doc_id": did, "url": url, **ref, "training_allowed": allowed}
        for ref in image_refs(content.blocks)
    ]
    tables = [
        {
            "doc_id": did,
            "url": url,
            "table_index": t.index,
            "markdown": t.markdown,
            "header": t.header,
            "cells": t.cells,
            "n_rows": t.n_rows,
            "n_cols": t.n_cols,
            "training_allowed": allowed,
        }
        for t in extract_tables(tree)
    ]
    interleaved = {"doc_id": did, "url": url, "blocks": content.blocks, "training_allowed": allowed}
    return ExtractResult(document=document, image_refs=refs, tables=tables, interleaved=interleaved)
