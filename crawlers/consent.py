"""The consent ledger: later opt-outs (robots.txt for the training token), append-only, with evidence.

A publisher who disallows the training token after we crawled must be out of every future
mixture. `recheck(lake_root)` re-fetches robots.txt for every host that holds documents in the
lake (`extract/documents.parquet`, `filter/documents.parquet`) or stored images
(`images/pairs/**/fetched.parquet` and `pairs.parquet`: an image's `src`, asked of the image's
own host, and its `final_url`, the URL a redirect led to that served the bytes, asked of that
host) with the crawler's `Downloader` (its SSRF guard, politeness slot, redirect limit and
RFC 9309 status mapping), evaluates the training token for every document and image URL of that
host, and appends one Parquet file to `<lake>/consent/ledger/` holding a row for each URL whose
training permission changed since the last word on it (the latest ledger row, else the crawl's
own robots decision; for an image, whether any of its rows was training-allowed). An image's
row is keyed by its URL (`src`), and its `doc_ids` are the image rows' ids (pair ids), so
`common.consent` refuses the image by `src` and by pair id, and its page stays in. An image
whose bytes came through a redirect is opted out when the robots.txt of any hop recorded
(`src`, `final_url`) disallows the training token (that hop's robots.txt is the row's
evidence); it is allowed again only when every hop's robots.txt was read and allows it.

robots.txt rules are matched against the URL as the crawler asks them: its canonical form
(`crawlers.crawl.canon.canonicalize`: percent-encoding normalised, non-ASCII UTF-8-escaped, dot
segments resolved), so `/%70rivate/`, `/public/../private/` and a raw `/café` meet
`Disallow: /private` and `Disallow: /café` as the crawl would have. The ledger keeps the URL as
the lake spells it (the key every consumer matches rows by).

Rules (stated, and tested in tests/ops/test_consent.py):

- Append-only: files are `ledger-<seq>.parquet` (seq = 1 + the highest present), created with an
  exclusive link so a concurrent recheck never overwrites one; nothing is ever rewritten. A
  recheck that changes nothing writes no file (so the ledger grows only on a change).
- Latest row wins, per URL, in file order: an opt-out is `training_allowed = false`; a host that
  allows the token again gets a `true` row. The ledger can only take documents out: a document
  the crawl already marked not allowed (meta noai, X-Robots-Tag, robots at crawl time) stays out
  whatever the ledger says, because the mixture reads `training_allowed IS TRUE` first.
- An archive's opt-out is not lifted by robots.txt: a row an import appends for an archived
  capture's noai (`robots_kind = 'archived'`, `crawlers.imports.consent.append_archived`) is
  the publisher's own word on that page, so a recheck never appends a `true` row for its URL,
  whatever robots.txt says now (a robots.txt opt-out on it is still recorded).
- An unreachable robots.txt at recheck time (network error, timeout, 5xx, 429, a refused address)
  is no evidence of a new opt-out: that host's documents keep their last state and the host is
  reported in `RecheckResult.unreachable`; the next recheck asks again. 4xx means "no
  robots.txt": allowed (RFC 9309), so a host that deletes its file re-allows its documents.
- Evidence per row: check time, host, URL, the document ids at that URL, the robots.txt URL,
  HTTP status and sha256 of the body as fetched, the policy kind, the agent group that applied
  and the rule line that matched (e.g. group `refinerybot-extended`, rule `Disallow: /`).

A ledger version is the sha256 of its sorted file names with each file's sha256
(`ledger_version`); a mixture manifest records the version it honoured.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common.consent import append_ledger, flag_true, latest_rows, ledger_files, ledger_version

DOCUMENT_SOURCES = ("extract/documents.parquet", "filter/documents.parquet")
# Any other documents file of the lake: imports (`imports/wet/`, `imports/docs/`), a filter or
# extract run written elsewhere under the lake (`--out lake/filter-wet`): a mixture may read any.
# One without a `url` column has no web origin to ask (synthetic data) and is passed over.
DOCUMENT_GLOBS = ("**/documents.parquet", "**/annotated.parquet")
# The render stage's outputs: the sub-resources (fetch, XHR, frames, scripts) a rendered page's
# text came through, each judged by its own origin's robots.txt as the render did.
RENDERED_GLOB = "**/rendered.parquet"
# `robots_kind` of a ledger row that records an archived capture's opt-out (an import's, not a
# robots.txt decision): no recheck re-allows its URL (`archived_optouts`).
ARCHIVED = "archived"
# The images stage's outputs in the lake (lake dataset image_pairs, one directory per shard):
# every stored or refused image row with its `src` (crawlers/images/fetch.py, filters/images/).
IMAGE_SOURCES = ("images/pairs/**/fetched.parquet", "images/pairs/**/pairs.parquet")


@dataclass
class LakeDocument:
    """A document URL of the lake: its ids and the crawl's robots decision for training.

    `hops`: the other URLs its content came from (a stored image's `final_url`, the CDN a
    redirect led to), each judged by its own origin's robots.txt too."""

    url: str
    host: str
    ids: set[str] = field(default_factory=set)
    allowed_at_crawl: bool = True
    hops: list[str] = field(default_factory=list)


def _web_host(url: Any) -> tuple[bool, str]:
    """(whether `url` is an http(s) URL with a host, its lower-case netloc)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url or "")
        return parts.scheme in ("http", "https") and bool(parts.hostname), parts.netloc.lower()
    except (ValueError, TypeError):  # 'http://[::1': the recheck reports it, goes on
        return str(url).lower().startswith(("http:", "https:")), ""


def _document_files(root: Path) -> list[tuple[Path, bool]]:
    """(documents file, whether it must have a `url` column): `DOCUMENT_SOURCES` first, then
    every other file `DOCUMENT_GLOBS` finds in the lake, each once, in a stable order."""
    seen: set[Path] = set()
    out: list[tuple[Path, bool]] = []
    for rel in DOCUMENT_SOURCES:
        path = root / rel
        if path.exists():
            seen.add(path.resolve())
            out.append((path, True))
    found = {p for pattern in DOCUMENT_GLOBS for p in root.glob(pattern) if p.is_file()}
    for path in sorted(found):
        if path.resolve() not in seen:
            seen.add(path.resolve())
            out.append((path, False))
    return out


def lake_documents(lake_root: str | Path) -> dict[str, LakeDocument]:
    """Every http(s) document URL in the lake's documents files (extract, filter, imports, and
    any other run's under the lake: `_document_files`), with its document ids; a page the
    render stage rendered gets, as `hops`, the sub-resources its text came through
    (`rendered_hops`)."""
    from common.inputs import read_parquet, read_schema

    docs: dict[str, LakeDocument] = {}
    for path, known in _document_files(Path(lake_root)):
        fix = "the consent recheck needs document URLs: re-run `refinery extract`/`filter`"
        names = read_schema(path, fix).names  # empty, truncated, not Parquet: one line
        if "url" not in names:
            if not known:
                continue  # no web document (synthetic data): no robots.txt governs it
            raise ValueError(f"{path}: no url column; the consent recheck needs document URLs")
        cols = [c for c in ("id", "url", "robots_training", "training_allowed") if c in names]
        for row in read_parquet(path, cols, required={"url": "string"}, fix=fix).to_pylist():
            url = row.get("url")
            web, host = _web_host(url)
            if not web:
                continue  # synthetic:// and other non-web documents have no robots.txt
            doc = docs.get(url)
            if doc is None:
                if "robots_training" in row:
                    before = row["robots_training"] == "allowed"
                else:
                    before = flag_true(row.get("training_allowed"))
                doc = docs[url] = LakeDocument(url, host, allowed_at_crawl=before)
            if row.get("id"):
                doc.ids.add(str(row["id"]))
    for url, hops in rendered_hops(lake_root).items():
        doc = docs.get(url)
        if doc is not None:
            doc.hops += [h for h in hops if h != url and h not in doc.hops]
    return docs


def rendered_hops(lake_root: str | Path) -> dict[str, list[str]]:
    """Page URL -> the http(s) sub-resources its rendered text came through (every type but
    images, media and fonts, as the render judged them: `crawlers.render.session`), from each
    `rendered.parquet` of the lake."""
    from common.inputs import read_parquet, read_schema
    from crawlers.render.session import TEXTLESS_TYPES

    out: dict[str, list[str]] = {}
    for path in sorted(Path(lake_root).glob(RENDERED_GLOB)):
        fix = "the consent recheck reads rendered pages' sub-resources: re-run `refinery extract`"
        if not {"url", "subresources"} <= set(read_schema(path, fix).names):
            continue  # no render output (another dataset of that name)
        for row in read_parquet(path, ["url", "subresources"], fix=fix).to_pylist():
            hops = out.setdefault(row["url"], [])
            for sub in row.get("subresources") or []:
                url = (sub or {}).get("url")
                if (sub or {}).get("resource_type") in TEXTLESS_TYPES or not _web_host(url)[0]:
                    continue
                if url not in hops:
                    hops.append(url)
    return out


def lake_images(lake_root: str | Path) -> dict[str, LakeDocument]:
    """Every http(s) image URL (`src`) of the lake's images stage outputs (`IMAGE_SOURCES`) with
    the ids of its rows (pair ids), whether any of them is training-allowed (the image's state
    before any ledger row: the fetch asked the robots.txt of every hop then) and, as `hops`, the
    URL that served its bytes when a redirect led elsewhere (fetched.parquet's `final_url`)."""
    from common.inputs import read_parquet, read_schema

    images: dict[str, LakeDocument] = {}
    root = Path(lake_root)
    for pattern in IMAGE_SOURCES:
        for path in sorted(root.glob(pattern)):
            fix = "the consent recheck needs image URLs: re-run `refinery images build`"
            names = read_schema(path, fix).names
            if "src" not in names:
                raise ValueError(
                    f"{path}: no src column; the consent recheck needs each image's URL: "
                    "re-run `refinery images build`"
                )
            cols = [c for c in ("id", "src", "final_url", "training_allowed") if c in names]
            rows = read_parquet(
                path, cols, required={"src": "string"}, optional={"final_url": "string"}, fix=fix
            )
            for row in rows.to_pylist():
                src = row.get("src")
                web, host = _web_host(src)
                if not web:
                    continue
                img = images.get(src)
                if img is None:
                    img = images[src] = LakeDocument(src, host, allowed_at_crawl=False)
                img.allowed_at_crawl |= flag_true(row.get("training_allowed"))
                if row.get("id"):
                    img.ids.add(str(row["id"]))
                hop = row.get("final_url")
                if hop and hop != src and hop not in img.hops and _web_host(hop)[0]:
                    img.hops.append(hop)
    return images


def merge_urls(
    docs: dict[str, LakeDocument], images: dict[str, LakeDocument]
) -> dict[str, LakeDocument]:
    """Every URL the recheck asks about: the documents', then the images' (a URL that is both
    keeps the document's state before, with the ids of both)."""
    urls = dict(docs)
    for src, img in images.items():
        doc = urls.get(src)
        if doc is None:
            urls[src] = img
        else:
            doc.ids |= img.ids
            doc.hops += [h for h in img.hops if h not in doc.hops]
    return urls


def robots_targets(url: str) -> list[str]:
    """The forms of the URL robots.txt rules are matched against, each of which must be allowed:
    the crawler's canonical form (the crawl asks robots.txt for its frontier URLs, which are
    canonical) and that form with runs of slashes in its path merged (a server that merges
    slashes serves `//private/x` as `/private/x`; the crawl's decision judges both too). UrlError
    when the URL is unusable (no robots.txt governs it: `_robots_origin` reports those)."""
    from crawlers.crawl.canon import canonicalize
    from crawlers.crawl.robots_policy import merged_slashes

    target = canonicalize(url)
    return list(dict.fromkeys([target, merged_slashes(target)]))


def robots_verdict(robots, agent: str, url: str) -> tuple[bool, str]:
    """(allowed, the form that decided): allowed only when every form of `robots_targets(url)`
    is; the form is the first one denied, else the canonical one."""
    targets = robots_targets(url)
    denied = next((t for t in targets if not robots.allows(agent, t)), None)
    return denied is None, denied or targets[0]


def matched_rule(robots, agent: str, url: str) -> tuple[str | None, str | None]:
    """(agent group, rule line) that decides `url` for `agent` under RFC 9309 longest match
    (allow wins ties); (group, None) when no rule of the group matches; (None, None) without a
    group. A status-derived policy (4xx, 5xx) reports its kind as the group."""
    from crawlers.robots_match import normalize_path, path_params_query, pattern_matches

    if robots.kind != "parsed":
        return robots.kind, None
    group = robots.matched_group(agent)
    if group is None:
        return None, None
    path = normalize_path(path_params_query(url))
    best: tuple[int, bool, str] | None = None
    for g in robots._groups_for(agent):  # the group's merged rules, as RobotsTxt decides on them
        for is_allow, pattern in g.rules:
            if not pattern or not pattern_matches(pattern, path):
                continue
            cand = (len(pattern), is_allow, pattern)
            if best is None or cand[:2] > best[:2]:
                best = cand
    if best is None:
        return group, None
    return group, f"{'Allow' if best[1] else 'Disallow'}: {best[2]}"


@dataclass
class RecheckResult:
    """What one recheck did."""

    hosts: int = 0
    documents: int = 0  # document URLs asked about
    images: int = 0  # image URLs asked about (one that is also a document's is counted there)
    changed: int = 0
    opted_out: int = 0  # rows appended with training_allowed = false
    re_allowed: int = 0  # rows appended with training_allowed = true
    unreachable: dict[str, str] = field(default_factory=dict)  # origin -> why (state kept)
    file: str | None = None  # the ledger file appended, None when nothing changed
    version: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """Plain figures for logs and metadata."""
        return {
            "hosts": self.hosts,
            "documents": self.documents,
            "images": self.images,
            "changed": self.changed,
            "opted_out": self.opted_out,
            "re_allowed": self.re_allowed,
            "unreachable": dict(self.unreachable),
            "file": self.file,
            "ledger_version": self.version.get("sha256"),
        }


def _unreachable(record) -> str | None:
    """Why a robots.txt fetch gives no evidence (None when it does)."""
    if record is None:
        return "robots.txt was not fetched"
    if record.error and not record.error.startswith("body-too-large"):
        return record.error
    if record.status is None:
        return "network error"
    if record.status >= 500 or record.status == 429:
        return f"HTTP {record.status}"
    return None


def _robots_origin(url: str) -> tuple[str, str | None]:
    """(origin, None): the origin whose robots.txt governs `url`, as the crawler writes it: one
    key for a host however a document spells it (IDNA/punycode, capitals, a trailing dot).
    (url, why) when no robots.txt can be asked for it (empty label, bad port, no host...)."""
    from crawlers.crawl.canon import UrlError, canonicalize
    from crawlers.robots import origin_of

    try:
        return origin_of(canonicalize(url)), None
    except (UrlError, ValueError, TypeError) as exc:
        return str(url), f"bad-url: {exc}"


@dataclass
class Verdict:
    """The training token's decision for one URL under its origin's robots.txt, with evidence."""

    allowed: bool
    agent_group: str | None
    rule: str | None
    robots_url: str
    robots_status: int | None
    robots_sha256: str
    robots_kind: str


def _verdict(origin: str, url: str, robots: Any, record: Any, agent: str, sha: str) -> Verdict:
    """`url` judged as the crawler matches it (every form; `robots_verdict`)."""
    now, target = robots_verdict(robots, agent, url)
    group, rule = matched_rule(robots, agent, target)
    return Verdict(now, group, rule, origin + "/robots.txt", record.status, sha, robots.kind)


def _decide(doc: LakeDocument, verdicts: dict[str, Verdict]) -> Verdict | None:
    """The verdict for a URL and its hops: an opt-out on any hop wins (the first such hop's);
    allowed only when every hop's robots.txt was read and allows; None (no evidence: its state
    is kept) when a hop's robots.txt could not be read and none that could opts out."""
    hops = [doc.url, *doc.hops]
    for hop in hops:
        got = verdicts.get(hop)
        if got is not None and not got.allowed:
            return got
    if all(hop in verdicts for hop in hops):
        return verdicts[doc.url]
    return None


def archived_optouts(files: list[Path]) -> dict[str, set[str]]:
    """{URL: the document ids} of the ledger rows in `files` that record an archived capture's
    opt-out (`robots_kind = ARCHIVED`, training_allowed false)."""
    import pyarrow.parquet as pq

    held: dict[str, set[str]] = {}
    cols = ["url", "doc_ids", "training_allowed", "robots_kind"]
    for f in files:
        for row in pq.read_table(f, columns=cols).to_pylist():
            if row["robots_kind"] == ARCHIVED and row["training_allowed"] is False:
                held.setdefault(row["url"], set()).update(row["doc_ids"] or ())
    return held


def _before(doc: LakeDocument, latest: dict[str, dict[str, Any]]) -> bool:
    """The last word on a document's training permission: its latest ledger row, else its
    state at crawl or fetch time."""
    prev_row = latest.get(doc.url)
    return doc.allowed_at_crawl if prev_row is None else prev_row["training_allowed"]


def _change(
    doc: LakeDocument,
    verdict: Verdict,
    latest: dict[str, dict[str, Any]],
    agent: str,
    held: dict[str, set[str]] | None = None,
) -> dict[str, Any] | None:
    """The ledger row (without checked_at) when `verdict` differs from the last word on the
    document (`_before`); None when it does not, and when it would re-allow a URL an archive
    opted out (`held`: `archived_optouts`)."""
    before = _before(doc, latest)
    if verdict.allowed == before or (verdict.allowed and doc.url in (held or {})):
        return None
    return {
        "host": doc.host,
        "url": doc.url,
        "doc_ids": sorted(doc.ids),
        "training_allowed": verdict.allowed,
        "previous": before,
        "agent": agent,
        "agent_group": verdict.agent_group,
        "rule": verdict.rule,
        "robots_url": verdict.robots_url,
        "robots_status": verdict.robots_status,
        "robots_sha256": verdict.robots_sha256,
        "robots_kind": verdict.robots_kind,
    }


async def recheck_async(lake_root: str | Path, config: Any = None) -> RecheckResult:
    """`recheck` in a running event loop."""
    from crawlers.crawl.downloader import Downloader
    from crawlers.crawl.recrawl import per_server
    from crawlers.robots import RobotsCache

    lake_root = Path(lake_root)
    documents = lake_documents(lake_root)
    images = lake_images(lake_root)
    docs = merge_urls(documents, images)
    files = ledger_files(lake_root)
    latest = latest_rows(files)
    held = archived_optouts(files)  # opted out by an archive: never re-allowed here
    # (URL to judge, its document) per origin: a document's own URL, and each hop an image's
    # bytes came through (an opt-out on the CDN that served it is the image's too)
    by_origin: dict[str, list[tuple[str, LakeDocument]]] = {}
    unreachable: dict[str, str] = {}
    for doc in docs.values():
        for hop in [doc.url, *doc.hops]:
            origin, bad = _robots_origin(hop)
            if bad is not None:  # no evidence from it, and the reason reported; the run goes on
                unreachable[origin] = bad
                continue
            by_origin.setdefault(origin, []).append((hop, doc))
    records: dict[str, Any] = {}
    result = RecheckResult(
        hosts=len(by_origin) + len(unreachable),
        documents=len(documents),
        images=len(docs) - len(documents),
    )
    changes: list[dict[str, Any]] = []
    # Verdicts of the hops of documents with more than one URL, decided once all are in (a
    # document of one URL is decided as soon as its origin's robots.txt is).
    hop_verdicts: dict[str, dict[str, Verdict]] = {}
    async with Downloader(config, on_robots_fetch=lambda r: records.__setitem__(r.origin, r)) as d:
        agent = d.cfg.training_agent
        # Each origin is asked once, and decided as soon as its robots.txt is in: neither the
        # fetched files nor the parsed policies of every host are held until the end (a lake
        # with 100k hosts would hold them all: ~1 MB per host for a 100 KiB robots.txt).
        d.robots.cache = RobotsCache(d.cfg.robots_max_age_s, max_entries=d.cfg.concurrency)

        async def check(origin: str) -> None:
            try:
                robots = await d.robots.get(origin + "/")  # SSRF guard, politeness, redirects
            except Exception as exc:  # one host never ends the recheck: its state is kept
                records.pop(origin, None)
                unreachable[origin] = f"error: {type(exc).__name__}: {exc}"[:500]
                return
            record = records.pop(origin, None)
            why = _unreachable(record)
            if why is not None:
                unreachable[origin] = why
                return
            sha = hashlib.sha256(record.body or b"").hexdigest()
            for hop, doc in by_origin[origin]:
                if doc.hops:
                    verdict = _verdict(origin, hop, robots, record, agent, sha)
                    hop_verdicts.setdefault(doc.url, {})[hop] = verdict
                elif robots_verdict(robots, agent, hop)[0] != _before(doc, latest):
                    # the evidence (matched rule) is looked up for a change only
                    verdict = _verdict(origin, hop, robots, record, agent, sha)
                    if (row := _change(doc, verdict, latest, agent, held)) is not None:
                        changes.append(row)

        # One lane per server (politeness key), so one server's many names cannot idle the rest.
        await per_server(d, sorted(by_origin), str, check)
    for doc in docs.values():
        if doc.hops and (verdict := _decide(doc, hop_verdicts.get(doc.url, {}))) is not None:
            if (row := _change(doc, verdict, latest, agent, held)) is not None:
                changes.append(row)
    checked_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    result.unreachable = dict(sorted(unreachable.items()))
    changes.sort(key=lambda r: (_robots_origin(r["url"])[0], r["url"]))
    rows = [{"checked_at": checked_at, **row} for row in changes]
    written = append_ledger(lake_root, rows)
    result.changed = len(rows)
    result.opted_out = sum(1 for r in rows if not r["training_allowed"])
    result.re_allowed = len(rows) - result.opted_out
    result.file = None if written is None else str(written)
    result.version = ledger_version(ledger_files(lake_root))
    return result


def recheck(lake_root: str | Path, config: Any = None) -> RecheckResult:
    """Re-fetch robots.txt for every host with documents or stored images in the lake and append
    the changes.

    `config` is a `CrawlConfig` (or dict of its fields) for the downloader: the training token,
    the SSRF policy (`allow_private_networks`), politeness (`delay`) and timeouts.
    """
    return asyncio.run(recheck_async(lake_root, config))
