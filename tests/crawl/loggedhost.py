"""What the news-like hosts built on other software (wpnews, facetnews) share: absolute URLs, the
request log and the coverage measure read from it.

Each subclass logs every request as (raw path with query, kind, article path or None) in
`self.log` and lists its articles' paths in `self.article_paths`."""

from __future__ import annotations

from collections import Counter

from .loopback import LoopbackServer


class LoggedNewsHost(LoopbackServer):
    """A loopback news host whose requests are logged with the kind each went to."""

    log: list[tuple[str, str, str | None]]
    article_paths: list[str]

    def url(self, path: str = "/") -> str:
        """Absolute URL of a path on the host."""
        return f"http://{self.ip}:{self.port}{path}"

    @property
    def articles(self) -> list[str]:
        """Absolute URLs of every article."""
        return [self.url(p) for p in self.article_paths]

    @property
    def hits(self) -> list[str]:
        """Request paths (with query), in order."""
        return [raw for raw, _, _ in self.log]

    def measure_log(
        self,
        *,
        not_content: tuple[str, ...],
        trap_kinds: tuple[str, ...],
        content: tuple[str, ...] | None = None,
    ) -> tuple[dict, set[str]]:
        """(the measure, the article paths served): coverage (articles served under a request of
        a `content` kind; None: any kind), coverage under the articles' own URLs, trap and dead
        shares of the requests that are not `not_content` (robots.txt, sitemaps), requests
        spent when 95% of the articles were in, and requests per kind."""
        requests = [(r, k, p) for r, k, p in self.log if k not in not_content]
        kinds = Counter(k for _, k, _ in requests)

        def counts(k: str, p: str | None) -> bool:
            return bool(p) and (content is None or k in content)

        got = {p for _, k, p in requests if counts(k, p)}
        clean = {p for _, k, p in requests if p and k == "article"}
        n = len(self.article_paths)
        seen: set[str] = set()
        at_95 = None  # requests spent when 95% of the articles were in
        for i, (_, k, p) in enumerate(requests, 1):
            if counts(k, p):
                seen.add(p)
                if at_95 is None and len(seen) >= 0.95 * n:
                    at_95 = i
        return {
            "articles": n,
            "requests": len(requests),
            "coverage": round(len(got) / n, 4),
            "coverage_clean_url": round(len(clean) / n, 4),
            "trap_share": round(sum(kinds[k] for k in trap_kinds) / max(1, len(requests)), 4),
            "dead_share": round(kinds["dead"] / max(1, len(requests)), 4),
            "requests_at_0.95": at_95,
            "families": dict(sorted(kinds.items())),
        }, got
