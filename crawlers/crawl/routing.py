"""Cross-shard routing: links to hosts of another shard go to that shard's inbox.

Each shard appends them to `<shard_root>/outbox/to-<j>/part-<k>-<first>-<last>.parquet` and
reads its own `outbox/to-<k>/` at start and on --resume (each part once, recorded in the
frontier). A part is written to a temporary name and renamed, so a reader never sees half of one.
Each row carries the spellings its link was found under (`found`: as written, before
canonicalisation sorts the query or decodes `%7E`), so the receiving shard asks robots.txt about
them as the sender would have (`crawlers.crawl.robots_policy.decision`); a spelling found after
its URL was routed is routed again with it at the next flush (in a part named
`part-<k>-<last>-<last>-<hash>` when no new link goes with it). Parts without `found` still read.

The render stage hands the links only a page's scripts revealed ("Load more", infinite scroll)
back the same way (`hand_on`: `part-render-<hash>.parquet`, source `render`), also to an
unsharded crawl (`outbox/to-0/`); the crawl judges them as links of the rendered page.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from crawlers.crawl.canon import UrlError, canonicalize, host_of
from crawlers.crawl.config import CrawlConfig, CrawlError, shard_of
from crawlers.crawl.frontier import Frontier
from crawlers.crawl.robots_policy import AS_FOUND_KEY, MAX_SPELLINGS

OTHER_SHARD = "other-shard"
RENDER_SOURCE = "render"  # an outbox row the render found in a page's final DOM
OUTBOX_SCHEMA = pa.schema(
    [
        ("url", pa.string()),
        ("depth", pa.int32()),
        ("source", pa.string()),
        ("parent", pa.string()),
        ("anchor", pa.string()),
        ("from_shard", pa.int32()),
        # the link as found (absolute, before canonicalisation): robots.txt must allow these too
        ("found", pa.list_(pa.string())),
    ]
)
RESPELLED_KEY = "outbox_respelled"  # frontier meta: routed URLs found under new spellings since


def found_of(value: Any) -> tuple[str, ...]:
    """An outbox row's `found` as spellings: its strings, at most MAX_SPELLINGS (an old part
    without the column, or a null: none)."""
    if not isinstance(value, (list, tuple)):
        return ()
    return tuple(f for f in value if isinstance(f, str) and f)[:MAX_SPELLINGS]


def shard_root_of(out_dir: Path, config: CrawlConfig | Mapping[str, Any]) -> Path:
    """Directory shared by the shards of one crawl (holds outbox/to-<j>/); `config` may also be
    the dict a crawl's frontier.sqlite keeps (the render reads it there)."""
    cfg = config if isinstance(config, Mapping) else config.model_dump()
    if cfg.get("shard_root"):
        return Path(cfg["shard_root"])
    out_dir = Path(out_dir)
    return out_dir.parent if out_dir.name == f"shard={cfg.get('shard') or 0}" else out_dir


def _write_part(path: Path, table: pa.Table) -> None:
    """Write one outbox part under a temporary name and rename it: a reader never sees half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def hand_on(shard_root: Path, shard: int, rows: list[dict[str, Any]]) -> Path | None:
    """Put the links the render found (OUTBOX_SCHEMA rows, source `render`, with the spellings
    the page wrote each in `found`) in shard `shard`'s inbox as one part named by a hash of its
    rows, so a render run again (or resumed) with the same links writes the same part, never a
    second; the part's path (None: no rows)."""
    if not rows:
        return None
    table = pa.Table.from_pylist(rows, schema=OUTBOX_SCHEMA)
    digest = hashlib.sha256(json.dumps(table.to_pylist(), sort_keys=True).encode()).hexdigest()
    path = shard_root / "outbox" / f"to-{shard}" / f"part-{RENDER_SOURCE}-{digest[:24]}.parquet"
    if not path.exists():
        try:
            _write_part(path, table)
        except OSError as exc:
            raise OSError(
                f"{path}: cannot write the links the render found for the crawl ({exc}); make "
                f"the crawl's shard root {shard_root} writable"
            ) from exc
    return path


class ShardRouter:
    """One shard's side of the routing: which hosts are its own, its outbox and its inbox."""

    def __init__(self, cfg: CrawlConfig, frontier: Frontier, shard_root: Path, stats: Counter[str]):
        self.cfg, self.frontier, self.shard_root, self.stats = cfg, frontier, shard_root, stats

    def in_shard(self, host: str) -> bool:
        return self.cfg.shards == 1 or shard_of(host, self.cfg.shards) == self.cfg.shard

    def skip_reason(self, host: str) -> str | None:
        """The frontier's skip reason of another shard's host (None for this shard's own)."""
        if self.in_shard(host):
            return None
        # Routed, not dropped: written to that shard's inbox at the next checkpoint.
        return f"{OTHER_SHARD}: routed to shard {shard_of(host, self.cfg.shards)}"

    def read_inbox(self, discover: Callable[..., str]) -> None:
        """Queue the URLs other shards routed here (each part file once, also across --resume).

        `discover(url, depth, source, parent, anchor, routed=..., found=...)` adds one URL to
        the frontier; `found` holds the spellings the link was found under (the row's `found`,
        and its `url` when that is not canonical), which robots.txt must allow too, as when the
        sending shard or the page itself had queued it. An unsharded crawl reads
        `outbox/to-0/` too: the render hands it the links a page's scripts revealed. Those are
        links of the rendered page (`parent`): discovered as source `link`, not `routed`, so
        every link rule applies (scope, depth, type, traps; robots.txt, under every spelling,
        when fetched), as to a link of the page's static HTML.
        """
        inbox = self.shard_root / "outbox" / f"to-{self.cfg.shard}"
        consumed = set(self.frontier.get_meta("inbox_consumed") or [])
        for part in sorted(inbox.glob("part-*.parquet")) if inbox.is_dir() else []:
            if part.name in consumed:
                continue
            try:
                rows = pq.read_table(part).to_pylist()
            except (OSError, pa.ArrowException) as exc:
                raise CrawlError(
                    f"{part}: unreadable outbox part ({exc}); delete the file (its sender "
                    "rewrites its outbox on --resume only for new links) or restore it"
                ) from exc
            with self.frontier:
                for r in rows:
                    try:
                        url = canonicalize(r["url"])
                    except (UrlError, TypeError, KeyError) as exc:
                        self.stats["inbox_rejected"] += 1
                        self.stats[f"inbox_rejected: {part.name}: {exc}"[:200]] += 1
                        continue
                    self.stats["inbox"] += 1
                    source = r.get("source") or "link"
                    rendered = source == RENDER_SOURCE and bool(r.get("parent"))
                    self.stats["inbox_render"] += rendered
                    found = found_of(r.get("found"))
                    if r["url"] != url and r["url"] not in found:
                        found = (r["url"], *found)[:MAX_SPELLINGS]
                    discover(
                        url,
                        int(r.get("depth") or 0),
                        "link" if rendered else source,
                        r.get("parent"),
                        r.get("anchor") or "",
                        routed=not rendered,
                        found=found,
                    )
                consumed.add(part.name)
                self.frontier.set_meta("inbox_consumed", sorted(consumed))

    def respelled(self, url: str) -> None:
        """Note (inside the caller's transaction) that `url`, already known, was found under a
        new spelling: when it was routed to another shard, the next flush routes it again with
        all its spellings, so the shard that fetches it asks robots.txt about the new one too."""
        if self.cfg.shards == 1 or self.in_shard(host_of(url)):
            return
        noted: list[str] = self.frontier.get_meta(RESPELLED_KEY) or []
        if url not in noted:
            self.frontier.set_meta(RESPELLED_KEY, [*noted, url])

    def flush_outbox(self) -> None:
        """Append the links routed to other shards since the last flush to their inboxes, each
        with the spellings it was found under (frontier meta `AS_FOUND_KEY + url`), and again
        the routed links found under a new spelling since (`respelled`)."""
        if self.cfg.shards == 1:
            return
        last = self.frontier.get_meta("outbox_seq") or 0
        rows = self.frontier.skipped_since(last, OTHER_SHARD)
        noted: list[str] = self.frontier.get_meta(RESPELLED_KEY) or []
        new = {r["url"] for r in rows}
        again = [
            r
            for r in self.frontier.rows_by_url([u for u in noted if u not in new])
            if r["state"] == "skipped" and (r["skip_reason"] or "").startswith(OTHER_SHARD)
        ]
        if not rows and not again:
            if noted:
                with self.frontier:
                    self.frontier.set_meta(RESPELLED_KEY, [])
            return
        by_shard: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for r in rows + again:
            by_shard[shard_of(r["host"], self.cfg.shards)].append(r)
        k = self.cfg.shard
        first, end = (rows[0]["seq"], rows[-1]["seq"]) if rows else (last, last)
        for j, rs in sorted(by_shard.items()):
            box = self.shard_root / "outbox" / f"to-{j}"
            table = pa.table(
                {
                    "url": [r["url"] for r in rs],
                    "depth": [r["depth"] for r in rs],
                    "source": [r["source"] for r in rs],
                    "parent": [r["parent"] for r in rs],
                    "anchor": [r["anchor"] for r in rs],
                    "from_shard": [k] * len(rs),
                    "found": [
                        list(found_of(self.frontier.get_meta(AS_FOUND_KEY + r["url"]))) for r in rs
                    ],
                },
                schema=OUTBOX_SCHEMA,
            )
            name = f"part-{k}-{first:012d}-{end:012d}"
            if not rows:  # only links routed again: named by their rows (the same rows, once)
                digest = hashlib.sha256(json.dumps(table.to_pylist()).encode()).hexdigest()
                name += f"-{digest[:12]}"
            _write_part(box / f"{name}.parquet", table)
            self.stats["routed_out"] += len(rs)
        if again:
            self.stats["routed_again"] += len(again)
        with self.frontier:
            self.frontier.set_meta("outbox_seq", end)
            self.frontier.set_meta(RESPELLED_KEY, [])
