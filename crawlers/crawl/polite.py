"""`PoliteFetcher`: the Fetcher with robots.txt and per-host politeness, for stages that fetch
individual URLs outside a crawl (e.g. images found in pages)."""

from __future__ import annotations

from urllib.parse import urljoin

from crawlers.crawl.config import CrawlConfig
from crawlers.crawl.fetcher import REDIRECT_STATUSES, Fetcher, FetchResult, now_iso
from crawlers.crawl.politeness import Politeness
from crawlers.crawl.robots_policy import ALLOWED, RobotsPolicy
from crawlers.robots import origin_of


class PoliteFetcher:
    """`async with PoliteFetcher(config, wanted_types=("image/*",)) as f: await f.fetch(url)`."""

    def __init__(
        self,
        config: CrawlConfig | dict | None = None,
        *,
        wanted_types: tuple[str, ...] | None = None,
    ):
        self.cfg = CrawlConfig.from_any(config)
        self.politeness = Politeness(
            delay=self.cfg.delay,
            max_crawl_delay=self.cfg.max_crawl_delay,
            backoff_base=self.cfg.backoff_base,
            backoff_max=self.cfg.backoff_max,
            max_retry_after=self.cfg.max_retry_after,
            breaker_threshold=self.cfg.breaker_threshold,
            breaker_cooldown=self.cfg.breaker_cooldown,
            breaker_max_trips=self.cfg.breaker_max_trips,
            seed=self.cfg.seed,
        )
        self.fetcher = Fetcher(
            user_agent=self.cfg.user_agent_header(),
            politeness=self.politeness,
            allow_private_networks=self.cfg.allow_private_networks,
            connect_timeout=self.cfg.connect_timeout,
            read_timeout=self.cfg.read_timeout,
            total_timeout=self.cfg.total_timeout,
            max_body_bytes=self.cfg.max_body_bytes,
            max_decompressed_bytes=self.cfg.max_decompressed_bytes,
            wanted_types=wanted_types or tuple(self.cfg.wanted_types),
            max_redirects=self.cfg.max_redirects,
            max_connections=self.cfg.concurrency * 2,
        )
        self.robots = RobotsPolicy(
            self.fetcher,
            agent=self.cfg.agent,
            training_agent=self.cfg.training_agent,
            max_age_s=self.cfg.robots_max_age_s,
            max_redirects=self.cfg.robots_max_redirects,
            retries=self.cfg.robots_retries,
        )

    async def __aenter__(self) -> PoliteFetcher:
        await self.fetcher.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.fetcher.__aexit__(*exc)

    async def fetch(self, url: str) -> FetchResult:
        """Fetch `url` if robots allows the crawl token; the result carries both robots decisions.

        Redirects are followed only within the same origin (other origins have their own robots.txt).
        """
        crawl, training, robots = await self.robots.decide(url)
        host = url.split("://", 1)[-1].split("/", 1)[0].lower()
        self.politeness.set_crawl_delay(host, robots.crawl_delay(self.cfg.agent))
        if crawl != ALLOWED:
            return FetchResult(
                url=url,
                final_url=url,
                status=None,
                error=f"robots-{crawl}",
                fetched_at=now_iso(),
                robots_crawl=crawl,
                robots_training=training,
            )
        res = await self.fetcher.fetch(url, max_redirects=0)
        visited = {url}
        while res.status in REDIRECT_STATUSES and res.header("location"):
            target = urljoin(res.final_url, res.header("location") or "")
            if origin_of(target) != origin_of(url):
                break  # the caller fetches it, under that origin's robots.txt and politeness
            if target in visited or len(visited) > self.cfg.max_redirects:
                res.error = f"redirect-loop-or-limit: {target}"
                break
            visited.add(target)
            t_crawl, t_training, _ = await self.robots.decide(target)
            if t_crawl != ALLOWED:
                res.error = f"redirect target robots-{t_crawl}: {target}"
                break
            nxt = await self.fetcher.fetch(target, max_redirects=0)
            nxt.hops = res.hops + nxt.hops
            nxt.url = url
            res, training = nxt, t_training if t_training != ALLOWED else training
        res.robots_crawl, res.robots_training = crawl, training
        return res
