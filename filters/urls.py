"""The filter's first step: drop pages whose URL is on a blocklist or carries banned words.

`UrlFilter(cfg.urls).check(url)` -> (drop reason, what matched) or None. Reasons:
`url_blocked:<category>` for a list hit (the category directory's name: `adult`, `phishing`, ...)
and `url_blocked:banned_word`, `url_blocked:soft_banned_words`, `url_blocked:banned_subword` for
FineWeb's word check. What matched (`host h`, `domain d`, `url u`, or the word(s)) goes to the
`url_block` column. Lists and words are `common.urlblock`'s (shared with the crawler's
frontier); by default the generated lists (`common.urlblock.default_entries`, reserved names only)
and the generated words (`common.urlblock.DEFAULT_WORDS`).
"""

from __future__ import annotations

from pathlib import Path

from common.urlblock import BannedWords, Blocklist, default_blocklist, load_blocklist
from filters.config import FilterConfig, UrlFilterConfig

REASON_PREFIX = "url_blocked:"


def is_url_reason(reason: str | None) -> bool:
    """True for a drop reason this step gives."""
    return bool(reason) and reason.startswith(REASON_PREFIX)


class UrlFilter:
    """The configured lists and words, loaded once (lists cached by their files' mtime)."""

    def __init__(self, cfg: UrlFilterConfig):
        self.cfg = cfg
        self.lists: Blocklist | None = None
        if cfg.blocklist_dir:
            self.lists = load_blocklist(cfg.blocklist_dir, cfg.categories)
        elif cfg.default_lists:
            self.lists = default_blocklist()
        self.words: BannedWords | None = None
        if cfg.banned_words:
            self.words = (
                BannedWords.load(cfg.words_dir, cfg.soft_word_threshold)
                if cfg.words_dir
                else BannedWords.default(cfg.soft_word_threshold)
            )

    def check(self, url: object) -> tuple[str, str] | None:
        """(drop reason, what matched) for a blocked URL, None for any other (or no) URL."""
        if not isinstance(url, str) or not url:
            return None
        if self.lists is not None:
            hit = self.lists.match(url)
            if hit is not None:
                return REASON_PREFIX + hit[0], hit[1]
        if self.words is not None:
            hit = self.words.match(url)
            if hit is not None:
                return REASON_PREFIX + hit[0], f"{hit[0]} {hit[1]}"
        return None


def with_blocklist(cfg: FilterConfig, directory: str | Path | None) -> FilterConfig:
    """`cfg` with its URL filter reading the lists in `directory` (the UT1 layout) instead of
    `urls.blocklist_dir` (`refinery filter --blocklist`); the filter is turned on if it was off."""
    if directory is None or str(directory) == "":
        return cfg
    cfg = cfg.model_copy(deep=True)
    cfg.urls.blocklist_dir = str(directory)
    cfg.urls.enabled = True
    return cfg


def describe(cfg: UrlFilterConfig) -> dict | None:
    """What the URL filter of a run uses (funnel.json's `url_filter`); loading the lists here, in
    the driver, makes a bad list file one line before any work starts. None when it is off."""
    if not cfg.enabled:
        return None
    f = UrlFilter(cfg)
    lists = f.lists
    return {
        "lists": lists.source if lists is not None else None,
        "entries": lists.counts if lists is not None else {},
        "bad_lines": lists.bad_lines if lists is not None else {},
        "banned_words": cfg.words_dir or ("generated defaults" if cfg.banned_words else None),
        "soft_word_threshold": cfg.soft_word_threshold,
    }
