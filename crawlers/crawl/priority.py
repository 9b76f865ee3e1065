"""Which URL to fetch next, and why: language, topic and path signals, plus trap detection.

Each signal is stored with the URL in the frontier so a user can see why it was chosen:
- lang_signal: share of target-language pages seen so far on the host (smoothed with a prior,
  or the filter stage's per-host language dataset when given);
- topic / topic_signal: a keyword-centroid classifier over URL tokens, anchor text and page text
  (~10 topics), with per-topic quotas applied at scheduling time;
- path_signal: URL-shape heuristics (archives, tags, pagination, session ids, calendars and deep
  or query-heavy URLs down; article-like slugs, dates and ids up).

Trap detection (calendar walks, multiplying parameters, ever-deepening paths, near-identical
page runs) lives in `crawlers.crawl.traps` and is re-exported here as `TrapDetector`.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from crawlers.crawl.canon import host_of
from crawlers.crawl.traps import TrapDetector, calendar_family

__all__ = [
    "TOPICS",
    "LanguageTracker",
    "TrapDetector",
    "Weights",
    "classify_topic",
    "combine",
    "path_pattern",
    "path_signal",
    "queued_row",
    "tokens_of",
    "topic_quota_penalty",
]

# ~10 topics, each a keyword centroid; a URL/page is scored by keyword hits.
TOPICS: dict[str, tuple[str, ...]] = {
    "science": tuple(
        "science research physics chemistry biology experiment study molecule species astronomy climate scientist theory cell".split()
    ),
    "technology": tuple(
        "software computer programming code python linux data algorithm internet device app digital network tech".split()
    ),
    "health": tuple(
        "health medical medicine doctor disease patient hospital nutrition symptom treatment vaccine fitness clinic".split()
    ),
    "sports": tuple(
        "sport sports football soccer match team league player tennis olympic score championship coach goal".split()
    ),
    "politics": tuple(
        "politics election government minister parliament policy vote law president senate party campaign".split()
    ),
    "business": tuple(
        "business market finance economy stock company bank price investment trade startup revenue money".split()
    ),
    "culture": tuple(
        "music film movie art book novel museum theatre painting culture poetry album history".split()
    ),
    "travel": tuple(
        "travel trip hotel city beach tour flight destination island mountain guide journey".split()
    ),
    "food": tuple(
        "food recipe cooking bread cheese kitchen dish restaurant wine cake soup ingredient bake".split()
    ),
    "education": tuple(
        "school education student teacher university course lesson learn exam tutorial class homework".split()
    ),
}
_TOKEN = re.compile(r"[a-z]{3,}")
_KEYWORD_TOPIC = {kw: t for t, kws in TOPICS.items() for kw in kws}

_BAD_SEGMENTS = {
    "tag",
    "tags",
    "category",
    "categories",
    "archive",
    "archives",
    "page",
    "feed",
    "search",
    "login",
    "signin",
    "register",
    "cart",
    "print",
    "share",
    "calendar",
    "author",
    "comment",
    "comments",
    "wp-admin",
    "cgi-bin",
    "sort",
    "filter",
}
_BAD_PARAMS = {
    "page",
    "p",
    "sort",
    "order",
    "filter",
    "view",
    "print",
    "replytocom",
    "date",
    "month",
    "year",
    "day",
    "share",
    "session",
    "sessionid",
    "sid",
    "offset",
}
_DATE_PATH = re.compile(r"/(19|20)\d\d/(0?[1-9]|1[0-2])(/\d{1,2})?/")
_SLUG = re.compile(r"[a-z0-9]+(-[a-z0-9]+){2,}")
_ID = re.compile(r"(^|[-_/])\d{3,}($|[-_./])")
_CALENDAR_TAIL = re.compile(r"/(19|20)\d\d(/\d{1,2}){0,2}/?$")


def tokens_of(*texts: str) -> list[str]:
    """Lower-case word tokens (3+ letters) of URLs and texts (URLs split on /-_.?=&)."""
    return [t for text in texts for t in _TOKEN.findall(unquote(text or "").lower())]


def classify_topic(text_tokens: list[str]) -> tuple[str, float]:
    """(topic, confidence in [0, 1]); ('other', 0.0) when no topic keyword occurs."""
    hits = Counter(_KEYWORD_TOPIC[t] for t in text_tokens if t in _KEYWORD_TOPIC)
    if not hits:
        return "other", 0.0
    (topic, n), total = hits.most_common(1)[0], sum(hits.values())
    # Confidence grows with evidence and with how dominant the winning topic is.
    return topic, round((n / total) * min(1.0, n / 3), 4)


def path_signal(url: str) -> tuple[float, list[str]]:
    """URL-shape score in [-1, 1] and the reasons behind it."""
    parts = urlsplit(url)
    path = parts.path.lower()
    segs = [s for s in path.split("/") if s]
    params = parse_qsl(parts.query, keep_blank_values=True)
    score, why = 0.0, []
    bad = [s for s in segs if s in _BAD_SEGMENTS]
    if bad:
        score -= 0.4
        why.append(f"listing segment {bad[0]}")
    if any(k.lower() in _BAD_PARAMS for k, _ in params):
        score -= 0.3
        why.append("listing/session query parameter")
    if len(params) > 2:
        score -= 0.1 * (len(params) - 2)
        why.append(f"{len(params)} query parameters")
    if len(segs) > 6:
        score -= 0.1 * (len(segs) - 6)
        why.append(f"deep path ({len(segs)} segments)")
    if _CALENDAR_TAIL.search(path) or calendar_family(url) is not None:  # /2024/05/, ?m=202405
        score -= 0.3
        why.append("date archive")
    last = segs[-1] if segs else ""
    if _SLUG.fullmatch(re.sub(r"\.(html?|php|aspx?)$", "", last)):
        score += 0.4
        why.append("article slug")
    elif _ID.search("/" + last):
        score += 0.2
        why.append("numeric id")
    if _DATE_PATH.search(path + "/") and not _CALENDAR_TAIL.search(path):
        score += 0.2
        why.append("dated article")
    if not segs:
        score += 0.2
        why.append("home page")
    return max(-1.0, min(1.0, round(score, 4))), why


def path_pattern(url: str) -> str:
    """A URL's shape: host + path with digit runs replaced, query keys only (for reports).

    Not a trap signal: a news site's articles share one pattern; traps.TrapDetector decides."""
    parts = urlsplit(url)
    path = re.sub(r"\d+", "N", parts.path)
    keys = ",".join(sorted({k for k, _ in parse_qsl(parts.query, keep_blank_values=True)}))
    return f"{parts.netloc}{path}?{keys}"


class LanguageTracker:
    """Per-host share of target-language pages, smoothed toward a prior (host dataset or 0.5)."""

    def __init__(
        self,
        target_languages: list[str],
        host_languages: Path | str | None = None,
        weight: float = 3.0,
    ):
        self.targets = {t.lower() for t in target_languages}
        self.weight = weight
        self.counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # host -> [target, total]
        self.priors: dict[str, float] = {}
        if host_languages:
            self.load_host_dataset(Path(host_languages))

    def load_host_dataset(self, path: Path) -> None:
        """Read the filter stage's per-host language parquet (host, lang, share)."""
        import pyarrow.parquet as pq

        if not path.exists():
            raise FileNotFoundError(
                f"host language dataset {path} does not exist (option host_languages_path)"
            )
        table = pq.read_table(path)
        missing = {"host", "lang", "share"} - set(table.column_names)
        if missing:
            raise ValueError(
                f"{path}: missing column(s) {sorted(missing)}; expected host, lang, share"
            )
        priors: dict[str, float] = defaultdict(float)
        for row in table.select(["host", "lang", "share"]).to_pylist():
            priors[str(row["host"]).lower()] += (
                float(row["share"] or 0) if str(row["lang"]).lower() in self.targets else 0.0
            )
        self.priors = {h: min(1.0, s) for h, s in priors.items()}

    def observe(self, host: str, lang: str) -> None:
        """Count one fetched page of `host` identified as `lang`."""
        c = self.counts[host]
        c[0] += lang.lower() in self.targets
        c[1] += 1

    def signal(self, host: str) -> float:
        """Smoothed share of target-language pages on the host, in [0, 1]."""
        prior = self.priors.get(host.split(":")[0], self.priors.get(host, 0.5))
        target, total = self.counts.get(host, (0, 0))
        return round((target + prior * self.weight) / (total + self.weight), 4)


@dataclass
class Weights:
    """How the signals combine into one priority."""

    lang: float = 1.0
    topic: float = 0.3
    path: float = 1.0
    depth: float = 0.1
    sitemap: float = 0.2


def combine(
    lang: float, topic_signal: float, path: float, depth: int, from_sitemap: bool, w: Weights
) -> float:
    """The stored priority of a URL (higher is fetched first)."""
    return round(
        w.lang * lang
        + w.topic * topic_signal
        + w.path * path
        - w.depth * depth
        + (w.sitemap if from_sitemap else 0.0),
        4,
    )


def topic_quota_penalty(
    topic: str, fetched_by_topic: Counter[str], max_share: float, min_pages: int = 20
) -> float:
    """Penalty for a topic already over its share of fetched pages (no topic swamps the crawl)."""
    total = sum(fetched_by_topic.values())
    if total < min_pages or topic == "other":
        return 0.0
    share = fetched_by_topic[topic] / total
    return (
        0.0
        if share <= max_share
        else round(2.0 * (share - max_share) / max(1e-9, 1 - max_share) + 0.5, 4)
    )


def queued_row(
    url: str,
    depth: int,
    source: str,
    parent: str | None,
    anchor: str,
    parent_topic: str,
    tier: int,
    langs: LanguageTracker,
    weights: Weights,
) -> dict[str, Any]:
    """The frontier row of a newly found URL: its signals, priority and the reasons for it."""
    host = host_of(url)
    topic, topic_sig = classify_topic(tokens_of(url.split("://", 1)[-1].partition("/")[2], anchor))
    if topic == "other" and parent_topic != "other":
        topic, topic_sig = parent_topic, 0.1  # weak prior: pages link within their topic
    lang_sig = langs.signal(host)
    p_sig, why = path_signal(url)
    prio = combine(lang_sig, topic_sig, p_sig, depth, source == "sitemap", weights)
    reasons = [f"lang {lang_sig:.2f}", f"topic {topic} {topic_sig:.2f}", *why, f"depth {depth}"]
    if tier == 0:
        first = "seed" if source == "seed" else "redirect of a seed"
        reasons.insert(0, f"{first}: fetched before discovered URLs")
    return {
        "url": url,
        "host": host,
        "depth": depth,
        "state": "queued",
        "source": source,
        "parent": parent,
        "anchor": anchor[:200],
        "priority": prio,
        "lang_signal": lang_sig,
        "topic": topic,
        "topic_signal": topic_sig,
        "path_signal": p_sig,
        "priority_reasons": "; ".join(reasons),
        "attempts": 0,
        "tier": tier,
    }
