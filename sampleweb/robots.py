"""robots.txt variants of the sample web and an RFC 9309 matcher that computes the expected outcomes.

The matcher exists so the labels are computed from the rules we wrote, not hand-copied; tests
cross-check it against gpyrobotstxt (Google's parser) so a mistake in either shows up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .model import site_link

CRAWL_TOKEN = "RefineryBot"
TRAINING_TOKEN = "RefineryBot-Extended"


@dataclass(frozen=True)
class RobotsVariant:
    """What a site's /robots.txt answers: a status and, for 200, the file's text (with site markers)."""

    status: int
    text: str = ""


def robots_for(site_name: str, variant: str, sitemap: str | None) -> RobotsVariant:
    """The robots.txt of one site; `variant` names one of the rule sets below."""
    sitemap_line = f"\nSitemap: {site_link(site_name, sitemap)}\n" if sitemap else ""
    if variant == "unavailable":  # 503: RFC 9309 says assume complete disallow
        return RobotsVariant(503, "robots.txt temporarily unavailable\n")
    if variant == "missing":  # 404: RFC 9309 says assume no restrictions
        return RobotsVariant(404, "not found\n")
    texts = {
        "standard": (
            "# Default rules for every crawler\n"
            "User-agent: *\nDisallow: /private/\nDisallow: /tmp/\n\n"
            f"User-agent: {TRAINING_TOKEN}\nDisallow: /private/\nDisallow: /tmp/\n"
        ),
        "gallery": (
            "User-agent: *\nDisallow: /private/\nDisallow: /tmp/\n\n"
            "# Licensed pictures may be shown, not used to train models\n"
            f"User-agent: {TRAINING_TOKEN}\nDisallow: /private/\nDisallow: /tmp/\n"
            "Disallow: /img/licensed/\n"
        ),
        "news": (
            "User-agent: *\nDisallow: /private/\nDisallow: /search\nAllow: /\n\n"
            "# AI training opt-out for subscriber content\n"
            f"User-agent: {TRAINING_TOKEN}\nDisallow: /premium/\nDisallow: /private/\nDisallow: /search\n"
        ),
        "wildcards": (
            "User-agent: *\nDisallow: /*?sessionid=\nDisallow: /*.pdf$\nDisallow: /members/\n"
            "Allow: /members/public/\n\n"
            f"User-agent: {TRAINING_TOKEN}\nDisallow: /*?sessionid=\nDisallow: /*.pdf$\n"
            "Disallow: /members/\n"
        ),
        "token-groups": (
            "# Everyone else stays out; our partners' crawler is welcome.\n"
            "User-agent: *\nDisallow: /\n\n"
            f"User-agent: {CRAWL_TOKEN}\nAllow: /\nDisallow: /cart/\nCrawl-delay: 0.5\n\n"
            f"User-agent: {TRAINING_TOKEN}\nDisallow: /cart/\nDisallow: /reviews/\n"
        ),
        "no-training": (
            f"User-agent: *\nDisallow: /intern/\n\nUser-agent: {TRAINING_TOKEN}\nDisallow: /\n"
        ),
    }
    if variant not in texts:
        raise KeyError(
            f"unknown robots variant {variant!r}; known: {sorted(texts)} + unavailable, missing"
        )
    return RobotsVariant(200, texts[variant] + sitemap_line)


def _groups(text: str) -> list[tuple[list[str], list[tuple[bool, str]]]]:
    """Parse robots.txt into (user-agents, [(allow, pattern)]) groups."""
    groups: list[tuple[list[str], list[tuple[bool, str]]]] = []
    agents: list[str] = []
    rules: list[tuple[bool, str]] = []
    last_was_agent = False
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if ":" not in line:
            continue
        key, value = (part.strip() for part in line.split(":", 1))
        key = key.lower()
        if key == "user-agent":
            if not last_was_agent and (agents or rules):
                groups.append((agents, rules))
                agents, rules = [], []
            agents.append(value.lower())
            last_was_agent = True
        elif key in ("allow", "disallow"):
            if value:
                rules.append((key == "allow", value))
            last_was_agent = False
        else:
            last_was_agent = False
    if agents:
        groups.append((agents, rules))
    return groups


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    regex = ".*".join(re.escape(part) for part in body.split("*"))
    return re.compile(regex + ("$" if anchored else ""))


def is_allowed(robots: RobotsVariant, token: str, path: str) -> bool:
    """RFC 9309 outcome for a product token and a path (path may carry a query)."""
    if path == "/robots.txt":
        return True
    if robots.status >= 500:
        return False
    if robots.status >= 400:
        return True
    groups = _groups(robots.text)
    mine = [rules for agents, rules in groups if token.lower() in agents]
    if not mine:
        mine = [rules for agents, rules in groups if "*" in agents]
    rules = [rule for group in mine for rule in group]
    best: tuple[int, bool] | None = None
    for allow, pattern in rules:
        if _pattern_regex(pattern).match(path):
            # Longest pattern wins; on a tie the least restrictive (allow) wins.
            key = (len(pattern), allow)
            if best is None or key > best:
                best = key
    return True if best is None else best[1]
