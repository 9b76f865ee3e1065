"""Cross-shard routing: links to hosts of another shard go to that shard's inbox.

Each shard appends them to `<shard_root>/outbox/to-<j>/part-<k>-<first>-<last>.parquet` and
reads its own `outbox/to-<k>/` at start and on --resume (each part once, recorded in the
frontier). A part is written to a temporary name and renamed, so a reader never sees half of one.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from crawlers.crawl.canon import UrlError, canonicalize
from crawlers.crawl.config import CrawlConfig, CrawlError, shard_of
from crawlers.crawl.frontier import Frontier

OTHER_SHARD = "other-shard"
OUTBOX_SCHEMA = pa.schema(
    [
        ("url", pa.string()),
        ("depth", pa.int32()),
        ("source", pa.string()),
        ("parent", pa.string()),
        ("anchor", pa.string()),
        ("from_shard", pa.int32()),
    ]
)


def shard_root_of(out_dir: Path, config: CrawlConfig) -> Path:
    """Directory shared by the shards of one crawl (holds outbox/to-<j>/)."""
    if config.shard_root:
        return Path(config.shard_root)
    out_dir = Path(out_dir)
    return out_dir.parent if out_dir.name == f"shard={config.shard}" else out_dir


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

        `discover(url, depth, source, parent, anchor, routed=True)` adds one URL to the frontier.
        """
        if self.cfg.shards == 1:
            return
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
                    discover(
                        url,
                        int(r.get("depth") or 0),
                        r.get("source") or "link",
                        r.get("parent"),
                        r.get("anchor") or "",
                        routed=True,
                    )
                consumed.add(part.name)
                self.frontier.set_meta("inbox_consumed", sorted(consumed))

    def flush_outbox(self) -> None:
        """Append the links routed to other shards since the last flush to their inboxes."""
        if self.cfg.shards == 1:
            return
        last = self.frontier.get_meta("outbox_seq") or 0
        rows = self.frontier.skipped_since(last, OTHER_SHARD)
        if not rows:
            return
        by_shard: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            by_shard[shard_of(r["host"], self.cfg.shards)].append(r)
        k = self.cfg.shard
        first, end = rows[0]["seq"], rows[-1]["seq"]
        for j, rs in sorted(by_shard.items()):
            box = self.shard_root / "outbox" / f"to-{j}"
            box.mkdir(parents=True, exist_ok=True)
            table = pa.table(
                {
                    "url": [r["url"] for r in rs],
                    "depth": [r["depth"] for r in rs],
                    "source": [r["source"] for r in rs],
                    "parent": [r["parent"] for r in rs],
                    "anchor": [r["anchor"] for r in rs],
                    "from_shard": [k] * len(rs),
                },
                schema=OUTBOX_SCHEMA,
            )
            path = box / f"part-{k}-{first:012d}-{end:012d}.parquet"
            tmp = path.with_name(path.name + ".tmp")
            pq.write_table(table, tmp)
            os.replace(tmp, path)  # a reader never sees half a part
            self.stats["routed_out"] += len(rs)
        with self.frontier:
            self.frontier.set_meta("outbox_seq", end)
