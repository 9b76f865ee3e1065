"""Consent for images: the image's own X-Robots-Tag (read before the body) and robots.txt's
training token, as a header gate and a downloader layer.

- `xrt_opt_out(values, agent, training_agent)`: the `noai`/`noimageai` directive that applies to
  our agents in X-Robots-Tag header values ('noai', 'RefineryBot-Extended: noimageai', ...).
- `HeaderGate`: given to the `Downloader` as its header gate, so a 2xx response carrying such a
  directive ends with an error before a single body byte is read, and a redirect (3xx) carrying
  one ends the fetch there, its target never requested: an opt-out on any hop is the image's.
- `TrainingConsentLayer`: sits after the RobotsLayer; a request whose URL the training token may
  not use is refused before it is sent (nothing that cannot be stored is downloaded).
"""

from __future__ import annotations

from crawlers.crawl.downloader import Layer, Request, refusal
from crawlers.crawl.fetcher import FetchResult, Hop
from crawlers.crawl.html import Directives, apply_x_robots_tag
from crawlers.crawl.robots_policy import ALLOWED

OPT_OUT_WORDS = ("noai", "noimageai")
XRT_PREFIX = "x-robots-tag-"  # error prefix of a header-gate refusal: 'x-robots-tag-noai: ...'
TRAINING_PREFIX = "robots-training-"  # error prefix of a TrainingConsentLayer refusal


def xrt_opt_out(values: list[str], agent: str, training_agent: str) -> str | None:
    """'noai' or 'noimageai' when X-Robots-Tag `values` opt our agents out, else None ('noai'
    when both do).

    Read exactly as the crawl reads them (`crawlers.crawl.html.apply_x_robots_tag`): directives
    split on commas, semicolons and whitespace, any case; a value scoped to another user agent
    ('OtherBot: noai') does not apply; an unscoped value or one scoped to the crawl or training
    token does.
    """
    d = Directives()
    apply_x_robots_tag(d, values, agent, training_agent)
    return "noai" if d.noai else "noimageai" if d.noimageai else None


class HeaderGate:
    """Downloader header gate: refuse the body of a response, or the redirect of a 3xx hop,
    whose X-Robots-Tag opts out."""

    def __init__(self, agent: str, training_agent: str):
        self.agent, self.training_agent = agent, training_agent

    def __call__(self, hop: Hop) -> str | None:
        values = [v for k, v in hop.response_headers if k.lower() == "x-robots-tag"]
        word = xrt_opt_out(values, self.agent, self.training_agent) if values else None
        if word is None:
            return None
        what = "redirect not followed" if 300 <= (hop.status or 0) < 400 else "body not downloaded"
        return f"{XRT_PREFIX}{word}: X-Robots-Tag {'; '.join(values)!r}; {what}"


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
