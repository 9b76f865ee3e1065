"""Consent for images: the image's own X-Robots-Tag (read before the body) and robots.txt's
training token, as a header gate and a downloader layer.

- `xrt_opt_out(values, agent, training_agent)`: the `noai`/`noimageai` directive that applies to
  our agents in X-Robots-Tag header values ('noai', 'RefineryBot-Extended: noimageai', ...).
- `HeaderGate`: given to the `Downloader` as its header gate, so a 2xx response carrying such a
  directive ends with an error before a single body byte is read.
- `TrainingConsentLayer`: sits after the RobotsLayer; a request whose URL the training token may
  not use is refused before it is sent (nothing that cannot be stored is downloaded).
"""

from __future__ import annotations

import re

from crawlers.crawl.downloader import Layer, Request, refusal
from crawlers.crawl.fetcher import FetchResult, Hop
from crawlers.crawl.robots_policy import ALLOWED

OPT_OUT_WORDS = ("noai", "noimageai")
XRT_PREFIX = "x-robots-tag-"  # error prefix of a header-gate refusal: 'x-robots-tag-noai: ...'
TRAINING_PREFIX = "robots-training-"  # error prefix of a TrainingConsentLayer refusal
# Directive names that contain a colon themselves, so 'name: value' is not a user-agent scope.
_VALUED = ("unavailable_after", "max-snippet", "max-image-preview", "max-video-preview")
_UA_SCOPED = re.compile(r"^\s*([A-Za-z][\w.\-]*)\s*:\s*(.*)$")


def xrt_opt_out(values: list[str], agent: str, training_agent: str) -> str | None:
    """The first of 'noai'/'noimageai' that X-Robots-Tag `values` apply to our agents, or None.

    A value scoped to another user agent ('OtherBot: noai') does not apply; an unscoped value or
    one scoped to the crawl or training token does.
    """
    ours = {agent.lower(), training_agent.lower()}
    for value in values:
        m = _UA_SCOPED.match(value)
        if m and m.group(1).lower() not in _VALUED:
            if m.group(1).lower() not in ours:
                continue
            value = m.group(2)
        words = {w.strip().lower() for w in value.split(",")}
        for word in OPT_OUT_WORDS:
            if word in words:
                return word
    return None


class HeaderGate:
    """Downloader header gate: refuse the body of a response whose X-Robots-Tag opts out."""

    def __init__(self, agent: str, training_agent: str):
        self.agent, self.training_agent = agent, training_agent

    def __call__(self, hop: Hop) -> str | None:
        values = [v for k, v in hop.response_headers if k.lower() == "x-robots-tag"]
        word = xrt_opt_out(values, self.agent, self.training_agent) if values else None
        if word is None:
            return None
        return f"{XRT_PREFIX}{word}: X-Robots-Tag {'; '.join(values)!r}; body not downloaded"


class TrainingConsentLayer(Layer):
    """Refuse a request whose URL robots.txt closes to the training token (after RobotsLayer)."""

    name = "training-consent"

    def __init__(self, training_agent: str):
        self.training_agent = training_agent

    async def process_request(self, request: Request) -> FetchResult | None:
        crawl, training = request.meta.get("robots", (None, None))
        if training == ALLOWED:
            return None
        res = refusal(
            request,
            f"{TRAINING_PREFIX}{training}: robots.txt for {self.training_agent}; not requested",
        )
        res.robots_crawl, res.robots_training = crawl, training
        return res
