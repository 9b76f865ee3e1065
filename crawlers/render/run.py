"""The render stage's driver: render the crawl's pages that need it into rendered.parquet (and
render-*.warc.gz with every response a page used), with the crawl's own tokens and politeness."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from common import lake

RENDERED_FILE = "rendered.parquet"
CONCURRENCY_SETTINGS = ("pages_in_flight", "memory_budget_mib")  # not in the journal's identity


def _rendered_schema():
    import pyarrow as pa

    blocked = pa.list_(pa.struct([("url", pa.string()), ("reason", pa.string())]))
    subresources = pa.list_(
        pa.struct(
            [
                ("url", pa.string()),
                ("status", pa.int32()),
                ("resource_type", pa.string()),
                ("robots_training", pa.string()),
            ]
        )
    )
    return pa.schema(
        [
            ("url", pa.string()),
            ("rendered", pa.bool_()),
            ("render_reason", pa.string()),
            ("html", pa.string()),
            ("error", pa.string()),
            ("render_ms", pa.int32()),
            ("blocked_requests", blocked),
            ("media_blocked", pa.int32()),
            ("interactions", pa.int32()),
            ("subresources", subresources),
            ("warc_file", pa.string()),
            ("warc_offset", pa.int64()),
            ("warc_length", pa.int64()),
            # links only the rendered DOM holds, handed on to the crawl's inbox for its --resume
            ("links_handed_on", pa.int32()),
        ]
    )


def _crawl_settings(crawl_dir: str | Path) -> dict[str, Any]:
    """The crawl's configuration (its first shard's frontier `config`), read-only; {} when
    there is none."""
    from crawlers.extract.warc import find_pages_files
    from crawlers.render.crawl import frontier_config

    for pages in find_pages_files(crawl_dir)[:1]:
        return frontier_config(pages)
    return {}


def _crashed(error: str | None) -> bool:
    """A page a browser crash took down (`Renderer.render`): retried, or an error."""
    return bool(error) and error.startswith(("browser crashed", "browser unavailable"))


def run_render(
    crawl_dir: str | Path,
    out_dir: str | Path,
    mode: str = "auto",
    *,
    pages_in_flight: int = 4,
    page_timeout_s: float = 20.0,
    chromium: str | None = None,
    block_media: bool = True,
    robots_token: str | None = None,
    training_token: str | None = None,
    user_agent: str | None = None,
    allow_private_networks: bool = False,
    delay: float | None = None,
    sandbox: str = "auto",
    archive: bool = True,
    memory_budget_mib: float | None = None,
) -> dict[str, Any]:
    """Render the crawl's pages that need it; write out_dir/rendered.parquet and return a summary.

    Sub-requests go through the crawl's downloader (robots for both tokens, SSRF guard,
    politeness); with `archive`, every response a page used is written to
    out_dir/render-*.warc.gz and located by the warc_* columns. Tokens, User-Agent and delay
    left as None are the crawl's own (from its frontier.sqlite), else the crawl defaults.
    Private networks are never inherited: pass `allow_private_networks` to lift the guard.
    Without it, a page on a private IP literal reaches its own origin (nothing else private)
    only when the crawl that fetched it ran with allow_private_networks; an imported page never
    (`crawlers.render.crawl.plan_renders`).
    With `memory_budget_mib`, at most `pages_in_flight` pages are in flight, as many as fit in
    the budget (`crawlers.render.budget`).

    Resumable: each finished page is committed to out_dir/render-journal.sqlite as it finishes
    (after its WARC batch is on disk), and a run killed part way is resumed by running it again
    with the same crawl and settings (concurrency aside): the finished pages are reused, not
    fetched again, and rendered.parquet is what one uninterrupted run writes
    (`crawlers.render.crawl.RenderJournal`). The journal is deleted once rendered.parquet is
    written.

    Links only a rendered DOM holds (a "Load more" listing's articles) go back to the crawl
    that fetched the page, into its inboxes (`crawlers.render.crawl.hand_on_links`): its next
    `crawl --resume` fetches them. Imported pages hand on nothing.
    """
    import pyarrow as pa

    from crawlers.render import RenderConfig
    from crawlers.render.crawl import JOURNAL_FILE, RenderJournal, render_crawl

    budget = None
    if memory_budget_mib is not None:
        import playwright.async_api  # noqa: F401 - the render imports it: resident before the fit

        from crawlers.render.budget import pages_in_flight_for

        budget = pages_in_flight_for(memory_budget_mib, pages_in_flight)
        pages_in_flight = budget.units

    out_dir = Path(out_dir)
    crawl_cfg = _crawl_settings(crawl_dir)
    robots_token = robots_token or crawl_cfg.get("agent") or "RefineryBot"
    training_token = training_token or crawl_cfg.get("training_agent") or "RefineryBot-Extended"
    if user_agent is None and robots_token == crawl_cfg.get("agent"):
        user_agent = crawl_cfg.get("user_agent")  # the template, {agent} filled in later
    if delay is None:
        delay = float(crawl_cfg.get("delay", 1.0))
    config = RenderConfig(
        chromium=chromium,
        pages_in_flight=pages_in_flight,
        page_timeout_s=page_timeout_s,
        block_media=block_media,
        robots_token=robots_token,
        training_token=training_token,
        user_agent=user_agent,
        allow_private_networks=allow_private_networks,
        delay=delay,
        sandbox=sandbox,
        archive_dir=out_dir if archive else None,
    )
    settings = {
        "mode": mode,
        "pages_in_flight": pages_in_flight,
        "page_timeout_s": page_timeout_s,
        "block_media": block_media,
        "robots_token": robots_token,
        "training_token": training_token,
        "user_agent": config.crawl_config().user_agent_header(),
        "allow_private_networks": allow_private_networks,
        "delay": delay,
        "sandbox": sandbox,
        "archive": archive,
    }
    if budget is not None:
        settings["memory_budget_mib"] = memory_budget_mib
    # What a page's render depends on (concurrency does not: a render killed for memory may
    # resume with fewer pages in flight), and the browser it ran in.
    same_render = {k: v for k, v in settings.items() if k not in CONCURRENCY_SETTINGS}
    journal = RenderJournal(
        out_dir / JOURNAL_FILE, {**same_render, "chromium": chromium}, config.archive_dir
    )
    start = time.monotonic()
    try:
        rows = render_crawl(crawl_dir, mode, config, journal=journal)
    finally:
        journal.close()
    elapsed = time.monotonic() - start
    path = out_dir / RENDERED_FILE
    lake.write_parquet(
        pa.Table.from_pylist(rows, schema=_rendered_schema()),
        path,
        inputs=[str(crawl_dir)],
        config=settings,
    )
    journal.remove()  # rendered.parquet holds every finished page now
    rendered = [r for r in rows if r["rendered"]]
    fresh = len(rendered) - journal.resumed  # rendered by this run
    crashed = [r["url"] for r in rendered if _crashed(r["error"])]
    if crashed:
        logging.getLogger(__name__).warning(
            "render: the browser crashed under %d page(s), e.g. %s; each is retried once after a "
            "relaunch, or an error when it could not be relaunched (their `error` says which)",
            len(crashed),
            crashed[0],
        )
    return {
        "path": str(path),
        "candidates": len(rows),
        "rendered": len(rendered),
        "render_errors": sum(1 for r in rendered if r["error"]),
        "crashed_pages": len(crashed),  # pages a browser crash took down (retried, or errors)
        "resumed_pages": journal.resumed,  # finished by a killed earlier run, taken from its journal
        "blocked_requests": sum(len(r["blocked_requests"]) for r in rendered),
        "subresources": sum(len(r["subresources"]) for r in rendered),
        # links only rendered DOMs hold, put in the crawl's inboxes for its next --resume
        "links_handed_on": sum(r["links_handed_on"] for r in rows),
        "seconds": round(elapsed, 2),
        "pages_per_s": round(fresh / elapsed, 3) if fresh and elapsed > 0 else 0.0,
        "pages_in_flight": pages_in_flight,
        "memory_budget": budget.as_dict() if budget else None,
    }
