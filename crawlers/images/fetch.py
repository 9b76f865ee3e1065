"""Consent-checked image fetch and safe decode: image refs in, `<out>/fetched.parquet` out
(with its manifest, `common.manifest.write_parquet`).

Every ref becomes exactly one row (rows in = rows out), in input order. In the order checked:

1. the page's own opt-out: a page that said `noai`/`noimageai` (`noai`) or whose training flag is
   false (`training_opt_out`): the image is never requested;
2. through the crawl's `Downloader` (SSRF guard, robots.txt for both tokens on the image's own
   host, politeness, retries, redirects hop by hop through every layer):
   - the crawl token may not fetch it: `robots_denied`, never requested;
   - robots.txt could not be read (5xx, 429, a network error, still after its re-fetches):
     `fetch_error` ('robots-unreachable: ...'), never requested: no verdict either way, so a
     resumed run asks again;
   - the training token may not use it: `training_opt_out`, never requested;
   - `X-Robots-Tag: noai`/`noimageai` on the response: `noai`, read from the headers, the body
     is not downloaded;
   - network failures and policy refusals (SSRF included): `fetch_error`; non-2xx: `http_status`;
     a 429/503 whose Retry-After is over `max_retry_after_s` is not waited for (`http_status`,
     the Retry-After in `error`), and its host's other images are not asked for until then
     (`fetch_error` 'host-paused: ...'): a resumed run asks for both again;
     a non-image content type: `not_image` (body not read); over `max_bytes` (Content-Length or
     while streaming; reading stops at the cap): `too_large`;
3. decoding (`crawlers.images.decode`): `not_image`, `decompression_bomb`, `undecodable`,
   `too_small`, `bad_aspect`;
4. faces are blurred (`crawlers.images.faces`): a kept image is stored content-addressed at
   `<out>/images/<sha256[:2]>/<sha256>.<ext>` (sha256 of the bytes as fetched): those bytes
   when no face was found and they carry nothing but the image, else (`stored_change` says
   why) the image with every found face blurred, turned upright by its orientation metadata,
   its first frame, or stripped of what its bytes carry beyond the image (an EXIF thumbnail,
   bytes after its end, chunks outside a safe set); the original bytes are then not kept, only
   their hash. `face_count` and `face_boxes` say what was blurred, and `stored_sha256` is the
   stored file's hash (what a reader checks the file against). A step on the image's own bytes
   that fails (turning it, decoding it in full, re-encoding it: `faces.ImageFault`) makes the
   row `undecodable`, the step in `error`: the image's, not the run's. An image whose face
   search, hashing or storage raised otherwise is not stored: `process_error`, the exception in
   `error` and its trace in the log, and the run goes on (a resumed run tries it again); eight
   such images in a row with none stored between end the run with that error (a broken
   install, a full disk).

A URL shared by many refs (a logo on every page) is fetched once, whatever its spelling (its
canonical form). Workers take refs round-robin over their servers, so the refs of one site in a
row do not hold every worker on that server's politeness. Progress is journaled
(`crawlers.images.journal`), so a run killed with `kill -9` resumes with `resume=True` without
losing or repeating a row; a resumed run also tries again the refs whose fetch failed for a
transient reason (timeout, connection error, a server given up on, an unreachable robots.txt, a
Retry-After not waited for).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from common.consent import FLAG, NO_LEDGER, Consent, describe_flag, flag_true
from common.manifest import write_parquet
from common.pairs import rgb_view
from common.phash import colour_thumbnail
from crawlers.crawl.canon import UrlError, canonicalize
from crawlers.crawl.downloader import TRANSIENT_ERRORS, Downloader, RetryLayer, RobotsLayer
from crawlers.crawl.fetcher import FetchResult, mime_of
from crawlers.crawl.politeness import ip_literal, parse_retry_after
from crawlers.crawl.robots_policy import ALLOWED, UNREACHABLE
from crawlers.images.config import IMAGE_TYPES, ImageFetchConfig
from crawlers.images.consent import (
    TRAINING_PREFIX,
    XRT_PREFIX,
    HeaderGate,
    TrainingConsentLayer,
)
from crawlers.images.decode import decode_image
from crawlers.images.faces import FaceDetector, ImageFault, image_step, redact
from crawlers.images.journal import open_journal
from crawlers.images.shards import ip_host, server_key

FETCHED = "fetched.parquet"
IMAGES = "images"
DROP_REASONS = (
    "robots_denied",
    "training_opt_out",
    "noai",
    "fetch_error",
    "http_status",
    "not_image",
    "too_large",
    "decompression_bomb",
    "too_small",
    "bad_aspect",
    "undecodable",
    "process_error",
)
# Images in a row whose face search, hashing or storage raised, with none stored between, that
# end the run with the last one's error: then the fault is the run's (a broken install, a full
# disk), not an image's.
FAULTS_IN_A_ROW = 8
FACE_BOXES = pa.list_(
    pa.struct([("x", pa.int32()), ("y", pa.int32()), ("w", pa.int32()), ("h", pa.int32())])
)
FETCHED_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("doc_id", pa.string()),
        ("src", pa.string()),
        ("alt", pa.string()),
        ("image_sha256", pa.string()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("image_path", pa.string()),
        ("training_allowed", pa.bool_()),
        ("drop_reason", pa.string()),
        ("status", pa.int32()),
        ("content_type", pa.string()),
        ("bytes", pa.int64()),
        ("error", pa.string()),
        # faces blurred in the stored image (null: no image stored)
        ("face_count", pa.int32()),
        ("face_boxes", FACE_BOXES),
        # sha256 of the stored file: image_sha256 unless faces were blurred
        ("stored_sha256", pa.string()),
        # pHash of the stored image (filters.images.dedup.phash_hex), from the fetch's decode
        ("phash", pa.string()),
        # its 8x8 colour thumbnail (common.phash.colour_thumbnail), hex: the de-duplication's
        # colour check; null where the file decodes to other pixels than the fetch's decode
        # (blurred, or a reduced JPEG draft): the check reads that file
        ("colour_thumbnail", pa.string()),
        # why the stored file is not the bytes as fetched (null: it is, or nothing stored):
        # 'faces blurred', 'turned upright (orientation 6)', 'first frame of 3', 'stripped (EXIF
        # thumbnail, 20078 bytes after EOI)', 're-encoded without (EXIF)' (crawlers.images.faces
        # .redact), comma-joined
        ("stored_change", pa.string()),
        # the URL of the last hop asked for (a redirect's target: the server that sent the
        # bytes of a stored image); null when nothing was requested. The consent recheck asks
        # its robots.txt as well as the src's (crawlers.consent)
        ("final_url", pa.string()),
    ]
)
# The image_refs.parquet columns `load_refs` reads, by kind (common.inputs).
REF_COLUMNS = {
    "doc_id": "string",
    "url": "string",
    "position": "int",
    "src": "string",
    "alt": "string",
    "surrounding_text": "string",
    "training_allowed": "any",
}
REQUIRED_REF_KEYS = ("id", "doc_id", "src", "alt", "training_allowed")
# Outcome fields that depend on the image URL alone (shared by every ref of that URL).
_OUTCOME_KEYS = (
    "image_sha256",
    "width",
    "height",
    "image_path",
    "drop_reason",
    "status",
    "content_type",
    "bytes",
    "error",
    "face_count",
    "face_boxes",
    "stored_sha256",
    "phash",
    "colour_thumbnail",
    "stored_change",
    "final_url",
)
# Refusals for a robots.txt that could not be read (5xx, 429, network errors, past the
# re-fetches): no consent verdict, a fetch_error a resumed run tries again.
ROBOTS_UNREACHABLE = (f"robots-{UNREACHABLE}", f"{TRAINING_PREFIX}{UNREACHABLE}")
# Config fields that change an outcome: a resumed run must use the same ones.
_OUTCOME_CONFIG = (
    "agent",
    "training_agent",
    "allow_private_networks",
    "max_bytes",
    "max_pixels",
    "min_side",
    "max_aspect",
    "faces",
)


def ref_id(doc_id: str, position: int) -> str:
    """Stable id of an image ref: '<doc_id>-<position in the document's blocks>'."""
    return f"{doc_id}-{int(position)}"


def load_refs(extract_dir: str | Path, consent: Consent | None = None) -> list[dict]:
    """An extract output's image refs joined with their page's opt-out flags, in file order.

    Each ref has id (`ref_id`), doc_id, url (the page), position, src, alt, surrounding_text,
    training_allowed, noai (from documents.parquet; `noimageai` too when that column exists) and
    consent_reason. `training_allowed` is the consent rule (`common.consent`) for the ref AND its
    document: true only when the ref's own flag is the boolean true, its document's flag in
    documents.parquet is the boolean true, and `consent` (the lake's ledger, when given) opts
    out neither; otherwise false, and `consent_reason` says why (None when allowed).
    """
    from common.inputs import InputError, read_rows

    root = Path(extract_dir)
    refs_path, docs_path = root / "image_refs.parquet", root / "documents.parquet"
    for path in (refs_path, docs_path):
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist; pass an `extract` output directory")
    fix = "re-run `refinery extract` (it writes documents.parquet and image_refs.parquet)"
    _check_same_extract_run(docs_path, refs_path)
    # One line naming the file and the column for an unreadable file, a missing column or a
    # column of the wrong kind; the flags may be any value (only the boolean true is consent).
    docs = read_rows(
        docs_path,
        ("id", "url", "training_allowed", "noai", "noimageai"),
        required={"id": "string", "noai": "any", "training_allowed": "any"},
        optional={"url": "string"},
        fix=fix,
    )
    flags = {d["id"]: d for d in docs}
    rule = consent if consent is not None else NO_LEDGER
    refs = []
    ref_rows = read_rows(refs_path, required=REF_COLUMNS, fix=fix)
    seen: dict[str, int] = {}
    for i, r in enumerate(ref_rows):
        null = r["doc_id"] is None or r["position"] is None
        key = "" if null else ref_id(r["doc_id"], r["position"])
        if null or key in seen:
            raise InputError(
                f"{refs_path}: row {i}: doc_id {r['doc_id']!r}, position {r['position']!r} "
                + (f"repeats row {seen[key]}" if key in seen else "is null")
                + "; each image ref is one (doc_id, position): "
                + fix
            )
        seen[key] = i
    for r in ref_rows:
        page = flags.get(r["doc_id"])
        why = rule.why_not(r)
        if why is not None:
            why = f"image ref's {why}" if why.startswith(FLAG) else why
        elif page is None:
            why = f"document {r['doc_id']} is not in {docs_path.name}"
        else:
            why = rule.why_not(page)
            if why is not None and why.startswith(FLAG):
                why = f"document's {why}"
        refs.append(
            {
                "id": ref_id(r["doc_id"], r["position"]),
                "doc_id": r["doc_id"],
                "url": r["url"],
                "position": r["position"],
                "src": r["src"],
                "alt": r["alt"],
                "surrounding_text": r["surrounding_text"],
                "training_allowed": why is None,
                "noai": bool((page or {}).get("noai")),
                "noimageai": bool((page or {}).get("noimageai")),
                "consent_reason": why,
            }
        )
    return refs


def _check_same_extract_run(docs_path: Path, refs_path: Path) -> None:
    """Refuse (one line naming both files) documents.parquet and image_refs.parquet that are not
    the outputs of one extract run, as their manifests tell: one has a manifest and the other
    none (a run killed between the two), a manifest's `rows` are not its file's, or the two
    differ in `inputs` or `config_sha256`, or image_refs was written before documents (a run
    writes documents first). Files without any manifest (another tool's) are taken as they are.
    """
    from common.inputs import InputError
    from common.manifest import manifest_path, read_manifest

    fix = "re-run `refinery extract` into that directory, which writes both"
    pair = f"{docs_path} and {refs_path}"
    has = [manifest_path(p).exists() for p in (docs_path, refs_path)]
    if not any(has):
        return
    if not all(has):
        (missing,) = [p for p, h in zip((docs_path, refs_path), has, strict=True) if not h]
        raise InputError(
            f"{pair} are not one extract run's outputs: {missing.name} has no manifest (a run "
            f"that did not finish); {fix}"
        )
    try:
        docs, refs = read_manifest(docs_path, fix), read_manifest(refs_path, fix)
        for path, man in ((docs_path, docs), (refs_path, refs)):
            rows = pq.read_metadata(path).num_rows
            if man.get("rows") != rows:
                raise InputError(
                    f"{pair} are not one extract run's outputs: {path.name} has {rows} rows, "
                    f"its manifest says {man.get('rows')}; {fix}"
                )
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"{pair}: cannot read them or their manifests ({exc}); {fix}") from None
    for field in ("inputs", "config_sha256"):
        if docs.get(field) != refs.get(field):
            raise InputError(
                f"{pair} are not one extract run's outputs: their manifests' {field} differ "
                f"({docs.get(field)!r} and {refs.get(field)!r}); {fix}"
            )
    made = (str(docs.get("written_at", "")), str(refs.get("written_at", "")))
    if made[1] < made[0]:
        raise InputError(
            f"{pair} are not one extract run's outputs: image_refs.parquet was written at "
            f"{made[1]}, before documents.parquet at {made[0]} (one run writes documents "
            f"first); {fix}"
        )


def _check_refs(refs: list[dict]) -> None:
    seen: set[str] = set()
    for i, ref in enumerate(refs):
        missing = [k for k in REQUIRED_REF_KEYS if k not in ref]
        if missing:
            raise ValueError(
                f"image ref #{i} lacks {', '.join(missing)}; refs are image_refs rows joined with "
                "their page's flags (use crawlers.images.load_refs)"
            )
        if ref["id"] in seen:
            raise ValueError(f"image ref #{i}: id {ref['id']!r} appears twice; ids must be unique")
        seen.add(ref["id"])


def _fingerprint(refs: list[dict], cfg: ImageFetchConfig) -> str:
    """What a resumed run must share with the run it continues: the refs (id, src, in order)
    and the config fields that change an outcome. Not the refs' consent: a ledger appended
    since (an opt-out, a re-allow) is applied to the journaled rows on resume (`_Run.rejudge`)."""
    settings = cfg.model_dump(mode="json")
    h = hashlib.sha256(json.dumps({k: settings[k] for k in _OUTCOME_CONFIG}).encode())
    for r in refs:
        h.update(json.dumps([r["id"], r["src"]]).encode())
    return h.hexdigest()


def unusable_src(src: object) -> str | None:
    """Why an image ref's src can not be fetched (not an http(s) URL, a host no connection could
    use, a bad port); None when it can."""
    if not isinstance(src, str) or not src.strip():
        return f"src {src!r} is not a URL"
    try:
        canonicalize(src)
    except UrlError as exc:
        return str(exc)
    return None


def page_opt_out(ref: dict) -> tuple[str, str] | None:
    """(drop_reason, detail) when the ref's page forbids training use of its images, else None.

    A page directive (noai/noimageai) is any true-ish value; consent is only the boolean true
    (`common.consent.flag_true`): a `training_allowed` of "false", "true", 1, None or NaN is no.
    """
    for flag in ("noimageai", "noai"):
        if ref.get(flag):
            return "noai", f"page said {flag}; {NOT_REQUESTED}"
    value = ref.get(FLAG)
    if not flag_true(value):
        why = ref.get("consent_reason") or describe_flag(value)
        return "training_opt_out", f"{why}; {NOT_REQUESTED}"
    return None


# How a page opt-out's row ends its error: nothing requested, or (a resume that met an opt-out
# appended since) nothing kept of what was fetched.
NOT_REQUESTED = "image not requested"
NOT_KEPT = "image fetched before this opt-out, not kept"


def _page_blocked(row: dict) -> bool:
    """Whether a journaled row is a page opt-out's (`page_opt_out`, or `_Run.rejudge`'s)."""
    return row.get("drop_reason") in ("noai", "training_opt_out") and (
        row.get("error") or ""
    ).endswith((f"; {NOT_REQUESTED}", f"; {NOT_KEPT}"))


def classify(
    res: FetchResult, max_retry_after: float | None = None
) -> tuple[str | None, str | None]:
    """(drop_reason, error) of a fetch result before decoding; (None, None) for a 2xx body.

    A 429/503 whose Retry-After is over `max_retry_after` (not waited for, `told_to_wait`) is
    `http_status` with the Retry-After in `error`, ending in NOT_WAITED (a resumed run asks
    again)."""
    err = res.error
    if err:
        if err.startswith(ROBOTS_UNREACHABLE):
            # no verdict: robots.txt could not be read (nothing was requested), so the image
            # is neither denied nor allowed; a resumed run asks again (`_transient`)
            return "fetch_error", err
        if err.startswith(TRAINING_PREFIX):
            return "training_opt_out", err
        if err.startswith("robots-"):
            return "robots_denied", err
        if err.startswith(XRT_PREFIX):
            return "noai", err
        if err.startswith("unwanted-content-type"):
            return "not_image", err
        if err.startswith("body-too-large") or (
            err.startswith("decode-error") and "exceeds" in err
        ):
            return "too_large", err
        return "fetch_error", err
    if res.status is None or not 200 <= res.status < 300:
        told = told_to_wait(res, max_retry_after)
        if told is not None:
            return "http_status", (
                f"HTTP {res.status}, Retry-After {told:.0f} s "
                f"(over max_retry_after_s={max_retry_after:g}): {NOT_WAITED}"
            )
        return "http_status", f"HTTP {res.status}"
    return None, None


# How the error of a 429/503 not waited for ends (`classify`): a resumed run asks again.
NOT_WAITED = "not waited for; a resumed run asks again"
# The error prefix of an image not requested because its host asked to wait (`_Run._fetch`).
HOST_PAUSED = "host-paused"


def told_to_wait(res: FetchResult, max_retry_after: float | None) -> float | None:
    """Seconds a 429/503 answer's Retry-After asks for when over `max_retry_after`, else None."""
    if max_retry_after is None or res.status not in (429, 503):
        return None
    told = parse_retry_after(res.header("retry-after"))
    return told if told is not None and told > max_retry_after else None


class ImageRetryLayer(RetryLayer):
    """The downloader's RetryLayer, except that a 429/503 whose Retry-After is over
    `max_retry_after` is not sent again: waiting that long would hold the image (and its
    server's other images) for minutes; its row says so and a resumed run asks again."""

    def __init__(self, max_retries, politeness, max_retry_after: float):
        super().__init__(max_retries, politeness)
        self.max_retry_after = max_retry_after

    async def process_response(self, request, result):
        if told_to_wait(result, self.max_retry_after) is not None:
            return result
        return await super().process_response(request, result)


OnImage = Callable[[str, Image.Image], None]


class SameBytes:
    """A run's `_store` outcomes by the body's sha256 (~0.5 KB each, up to `limit` bodies), so the
    same bytes fetched again under another URL are not decoded, searched, hashed or scored
    again; a thread that meets bytes another thread is still storing waits for its outcome."""

    def __init__(self, limit: int = 200_000):
        self.limit = limit
        self._lock = threading.Lock()
        self._by_sha: dict[str, Future] = {}

    def claim(self, sha: str) -> tuple[Future | None, bool]:
        """(the outcome's future, True when the caller is to store the body and set it); (None,
        False) when the run remembers too many bodies already (the caller stores it anyway)."""
        with self._lock:
            got = self._by_sha.get(sha)
            if got is not None:
                return got, False
            if len(self._by_sha) >= self.limit:
                return None, False
            fut: Future = Future()
            self._by_sha[sha] = fut
            return fut, True


def _store(
    out_dir: Path,
    data: bytes,
    cfg: ImageFetchConfig,
    faces: FaceDetector,
    on_image: OnImage | None = None,
    seen: SameBytes | None = None,
) -> dict:
    """Hash, decode, blur faces, pHash and (when kept) store one body; runs in a worker thread.

    The body is decoded once (a large JPEG reduced to what the face search needs) and every
    derived form comes from that decode: the face search's grey copy, its skin map, the pHash,
    and, when the file is the body as fetched and the decode is full size (the pixels decoding
    the file gives), the colour thumbnail the de-duplication compares and what `on_image` is
    handed (the stored file's path and that decoded image).

    `seen` (the run's `SameBytes`): bytes this run already stored under another URL (a
    cache-busting query, a CDN's other host, http and https) get that outcome again: the same
    file, hashes, faces and drop reason, with nothing decoded and `on_image` not called again
    (the file it was handed is the same). Consent is not part of it: the caller decides it for
    each URL."""
    sha = hashlib.sha256(data).hexdigest()
    fut, mine = seen.claim(sha) if seen is not None else (None, False)
    if fut is not None and not mine:
        return dict(fut.result())  # read only: the caller copies it into the URL's outcome
    try:
        out = _store_new(out_dir, data, sha, cfg, faces, on_image)
    except BaseException as exc:
        if fut is not None:
            fut.set_exception(exc)
        raise
    if fut is not None:
        fut.set_result(out)
    return dict(out)


def _store_new(
    out_dir: Path,
    data: bytes,
    sha: str,
    cfg: ImageFetchConfig,
    faces: FaceDetector,
    on_image: OnImage | None,
) -> dict:
    """_store's work for a body whose bytes this run has not stored yet."""
    dec = decode_image(
        data,
        max_bytes=cfg.max_bytes,
        max_pixels=cfg.max_pixels,
        min_side=cfg.min_side,
        max_aspect=cfg.max_aspect,
        draft_side=cfg.faces.search_side,
    )
    path, width, height, boxes, stored_sha, phash = None, dec.width, dec.height, None, None, None
    colour, change, stored = None, None, None
    if dec.drop_reason is None:
        size = (dec.width, dec.height)
        try:
            stored = redact(data, dec.image, dec.format, faces, frames=dec.frames, size=size)
            if not stored.same_pixels:  # re-encoded: the hash of the file as stored
                with image_step("hashing the stored file"):
                    phash = _phash_bytes(stored.data)
        except ImageFault as exc:
            # the image's own bytes or metadata, not the run: a reject, never tried again
            dec.drop_reason, dec.error = "undecodable", f"{dec.format}: {exc}"[:500]
            dec.image, stored = None, None
    if stored is not None:
        width, height, change = stored.width, stored.height, stored.change
        boxes = [b.as_dict() for b in stored.boxes]
        unchanged = stored.same_pixels  # the bytes as fetched, or stripped: the same pixels
        stored_sha = sha if stored.data is data else hashlib.sha256(stored.data).hexdigest()
        if unchanged:
            phash = _phash(dec.image)
        rel = f"{IMAGES}/{sha[:2]}/{sha}.{dec.ext}"
        target = out_dir / rel
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{sha}.{os.getpid()}.{id(data)}.tmp")
            tmp.write_bytes(stored.data)
            os.replace(tmp, target)  # whole or absent, even after kill -9
        if unchanged and not dec.reduced:  # the file decodes to exactly dec.image
            colour = colour_thumbnail(dec.image).hex()
            if on_image is not None:
                on_image(str(target), rgb_view(dec.image))  # what open_image gives of the file
        dec.image = None
        path = rel
    return {
        "image_sha256": sha,
        "width": width,
        "height": height,
        "image_path": path,
        "drop_reason": dec.drop_reason,
        "error": dec.error,
        "face_count": None if boxes is None else len(boxes),
        "face_boxes": boxes,
        "stored_sha256": stored_sha,
        "phash": phash,
        "colour_thumbnail": colour,
        "stored_change": change,
    }


def _process_error(src: str, data: bytes, exc: Exception) -> dict:
    """The outcome of an image whose bytes decoded but whose face search, hashing or storage
    raised: not stored (an image whose faces were not searched is never stored), the error in
    the row and the trace in the log."""
    logging.getLogger(__name__).warning("%s: not stored", src, exc_info=exc)
    return {
        "image_sha256": hashlib.sha256(data).hexdigest(),
        "drop_reason": "process_error",
        "error": f"{type(exc).__name__}: {exc}"[:500],
    }


def _phash(image) -> str:
    """The pHash the pairs' de-duplication uses (common/phash.py), of a decoded image."""
    from common.phash import phash_hex

    return phash_hex(image if image.mode == "RGB" else image.convert("RGB"))


def _phash_bytes(data: bytes) -> str:
    from common.phash import phash_bytes

    return phash_bytes(data)


def _one_torch_thread() -> None:
    """Each of the fetch's pool threads runs torch (MTCNN's face search) with one intra-op
    thread: the pool already keeps every core busy, and two OpenMP threads under each pool
    thread cost 63 ms of CPU a 480 px photograph against 53-56 with one (training.clip's encoder
    thread does the same). Set once per thread, not restored: torch also keeps the last value
    process-wide for threads that first use it later."""
    import torch

    torch.set_num_threads(1)


def _transient(outcome: dict) -> bool:
    """True for a failure worth trying again on resume: a transient fetch_error, or a
    process_error (a full disk, or a fault fixed since, as much as a bad image)."""
    error = outcome.get("error") or ""
    if outcome.get("drop_reason") == "process_error":
        return True
    if outcome.get("drop_reason") == "http_status":
        return error.endswith(NOT_WAITED)  # a Retry-After not waited for
    return outcome.get("drop_reason") == "fetch_error" and error.startswith(
        (*TRANSIENT_ERRORS, "host-gave-up", HOST_PAUSED, *ROBOTS_UNREACHABLE)
    )


def _dotted_host(url: str) -> str | None:
    """The dotted-decimal address of a URL whose host is a numeric IPv4 address spelled
    otherwise ('2130706438', '0177.0.0.6', '127.6', '127.0.0.06': '127.0.0.6', `shards.ip_host`),
    else None (a name, an address already so spelled, an IPv6 literal, no canonical form)."""
    try:
        host = urlsplit(canonicalize(url)).hostname or ""
    except (UrlError, ValueError):
        return None
    return None if ip_literal(host) is not None else ip_host(host)


def request_url(src: str) -> str:
    """The URL a src is requested at: the src as written, but a numeric IPv4 host spelled other
    than dotted-decimal rewritten to that form (the connection refuses the others, while
    `shards` and browsers take them as that address), port and userinfo kept."""
    address = _dotted_host(src)
    if address is None:
        return src
    parts = urlsplit(src.strip())
    userinfo, at, hostport = parts.netloc.rpartition("@")
    host, colon, port = hostport.partition(":")  # an IPv4 host: the first ':' starts the port
    if _dotted_host(f"http://{host}/") != address:  # the src as split names another host
        return src
    return urlunsplit(parts._replace(netloc=f"{userinfo}{at}{address}{colon}{port}"))


def url_key(src: str) -> str:
    """What a run keys one URL's outcome by: its canonical form (`crawlers.crawl.canon`) with a
    numeric IPv4 host dotted (`request_url`), so '…/a.png', '…/a.png#top', 'HTTP://…',
    ' …/a.png ' and 'http://2130706437/…' for 'http://127.0.0.5/…' are fetched once; the src
    itself when it has none."""
    try:
        return request_url(canonicalize(src))
    except UrlError:
        return src


class _Lanes:
    """The refs to do, one FIFO lane per server (`shards.server_key` of the canonical URL), in
    input order within each; `take` hands out the next ref round-robin over the servers with a
    free connection, so `concurrency` workers are never all queued on one server's politeness
    slot while others idle (refs of one site in a row, a gallery). Page opt-outs, which request
    nothing, form a lane of their own without a limit."""

    def __init__(self, refs: list[dict], per_server: int):
        self.per_server = per_server
        self.lanes: dict[str | None, deque] = {}
        for ref in refs:
            key = None if page_opt_out(ref) is not None else server_key(url_key(ref["src"] or ""))
            self.lanes.setdefault(key, deque()).append(ref)
        self.order = deque(self.lanes)  # the rotation, lanes with refs left
        self.busy: Counter = Counter()
        self.freed = asyncio.Event()

    def take(self) -> tuple[str | None, dict] | None:
        """(lane, ref) of the next ref whose server has a free connection; None when none has."""
        for _ in range(len(self.order)):
            key = self.order[0]
            self.order.rotate(-1)
            lane = self.lanes[key]
            if key is not None and self.busy[key] >= self.per_server:
                continue
            ref = lane.popleft()
            if not lane:
                self.order.remove(key)
            self.busy[key] += 1
            return key, ref
        return None

    def done(self, key: str | None) -> None:
        """A ref of lane `key` is finished: its connection is free again."""
        self.busy[key] -= 1
        self.freed.set()

    async def next(self) -> tuple[str | None, dict] | None:
        """The next ref to do, waiting while every server with refs left is busy; None when
        no ref is left."""
        while self.order:
            got = self.take()
            if got is not None:
                return got
            self.freed.clear()
            await self.freed.wait()
        return None


class _Run:
    """One fetch: workers over the refs, one outcome per URL, rows journaled in batches."""

    def __init__(self, refs, out_dir, cfg, journal, progress, on_image=None):
        self.refs, self.out_dir, self.cfg = refs, out_dir, cfg
        self.journal, self.progress, self.on_image = journal, progress, on_image
        # A resumed run tries again what failed for transient reasons (network errors, a server
        # whose circuit breaker opened), like the crawl re-queues abandoned hosts on --resume.
        # So is what names a stored file no longer there (removed when its last ref was opted
        # out on an earlier resume, `drop_unused`).
        self.outcomes: dict[str, dict] = {
            src: o for src, o in journal.outcomes().items() if self._reusable(o)
        }
        self.rows = {i: r for i, r in journal.rows().items() if self._reusable(r)}
        self.resumed = len(self.rows)
        self.inflight: dict[str, asyncio.Future] = {}  # by url_key, as outcomes
        # hosts whose 429/503 asked to wait longer than max_retry_after_s: (until, why)
        self.paused: dict[str, tuple[float, str]] = {}
        self.requests = 0
        self.pool = ThreadPoolExecutor(
            max_workers=min(4, os.cpu_count() or 1),
            initializer=_one_torch_thread if cfg.faces.detector == "mtcnn" else None,
        )
        self.faces = FaceDetector(cfg.faces)
        self.same_bytes = SameBytes()
        self.faults_in_a_row = 0  # images whose processing raised since one was stored
        self.downloader: Downloader | None = None

    def _reusable(self, outcome: dict) -> bool:
        """Whether a journaled outcome or row stands on resume: not a transient failure, and
        its stored file (if any) still there."""
        path = outcome.get("image_path")
        return not _transient(outcome) and (not path or (self.out_dir / path).exists())

    def rejudge(self, refs: list[dict]) -> set[str]:
        """On resume, the journaled rows judged by each ref's consent now (a ledger appended
        since the killed run): a ref now opted out gets its opt-out row, its image no longer
        kept; a ref now allowed whose row was its page opt-out is fetched this time. Returns
        the image paths the new opt-outs took from their rows (`drop_unused` removes each file
        no row keeps)."""
        taken: set[str] = set()
        for ref in refs:
            row = self.rows.get(ref["id"])
            if row is None:
                continue
            blocked = page_opt_out(ref)
            if blocked is None:
                if _page_blocked(row):
                    del self.rows[ref["id"]]  # allowed now: done again
                continue
            reason, detail = blocked
            if not _page_blocked(row) or (row.get("error") or "").endswith(NOT_KEPT):
                detail = detail.replace(NOT_REQUESTED, NOT_KEPT)
                if row.get("image_path"):
                    taken.add(row["image_path"])
            new = self._row(ref, {"drop_reason": reason, "error": detail}, False)
            if new != row:
                self.rows[ref["id"]] = new
                self.journal.add(new)
        self.resumed = len(self.rows)
        return taken

    def drop_unused(self, paths: set[str]) -> None:
        """Remove the stored files of `paths` that no output row keeps."""
        kept = {r.get("image_path") for r in self.rows.values()}
        for rel in sorted(paths - kept):
            (self.out_dir / rel).unlink(missing_ok=True)

    def _row(self, ref: dict, outcome: dict, page_ok: bool) -> dict:
        row = {k: ref.get(k) for k in ("id", "doc_id", "src", "alt")}
        row.update({k: outcome.get(k) for k in _OUTCOME_KEYS})
        row["training_allowed"] = bool(page_ok and outcome.get("image_training"))
        return row

    async def _fetch(self, src: str) -> dict:
        assert self.downloader is not None
        d = self.downloader
        host = urlsplit(url_key(src)).netloc
        until, why = self.paused.get(host, (0.0, ""))
        if time.monotonic() < until:  # its host asked to wait: not asked again before resume
            error = f"{HOST_PAUSED}: {why}; not requested, a resumed run asks again"
            return {"drop_reason": "fetch_error", "error": error, "image_training": False}
        while True:
            self.requests += 1
            res = await d.fetch(request_url(src), resource_type="image", wanted_types=IMAGE_TYPES)
            wait = d.robots.retry_at(res.final_url) if res.error else None
            if wait is None or not res.error.startswith("robots-unreachable"):
                break
            # robots.txt is down for now: wait for its re-fetch rather than deny (like the crawl).
            await asyncio.sleep(max(0.0, wait - time.monotonic()))
        cap = self.cfg.max_retry_after_s
        reason, error = classify(res, cap)
        told = told_to_wait(res, cap)
        if told is not None:
            self.paused[urlsplit(url_key(res.final_url)).netloc] = (
                time.monotonic() + told,
                f"HTTP {res.status} for {res.final_url} asked to wait {told:.0f} s",
            )
        body_read = len(res.body) if res.ok else sum(len(h.raw_body) for h in res.hops[-1:])
        outcome = {
            "final_url": res.final_url if res.hops else None,
            "status": res.status,
            "content_type": mime_of(res.content_type) or None,
            "bytes": body_read,
            "drop_reason": reason,
            "error": error,
            # Consent for training: the training token's robots and no X-Robots-Tag opt-out;
            # an image the crawl token may not even fetch is not usable either.
            "image_training": res.robots_training == ALLOWED
            and reason not in ("noai", "robots_denied"),
        }
        if reason is None:
            loop = asyncio.get_running_loop()
            try:
                stored = await loop.run_in_executor(
                    self.pool,
                    _store,
                    self.out_dir,
                    res.body,
                    self.cfg,
                    self.faces,
                    self.on_image,
                    self.same_bytes,
                )
            except Exception as exc:  # one image's failure is its row's, not the run's ...
                self.faults_in_a_row += 1
                if self.faults_in_a_row >= FAULTS_IN_A_ROW:
                    raise  # ... unless every image fails: the run's fault, to its caller
                stored = _process_error(src, res.body, exc)
            else:
                self.faults_in_a_row = 0
            outcome.update(stored)
        return outcome

    async def _outcome(self, src: str) -> tuple[dict, bool]:
        """(outcome, whether this call produced it, so it is journaled once). Keyed by the
        canonical URL (`url_key`): every spelling of one URL shares one fetch, made with the
        src of the first ref of it in input order (its server's lane is taken in order), its
        numeric host dotted (`request_url`)."""
        key = url_key(src)
        if key in self.outcomes:
            return self.outcomes[key], False
        if key in self.inflight:
            return await asyncio.shield(self.inflight[key]), False
        fut = asyncio.get_running_loop().create_future()
        self.inflight[key] = fut
        try:
            outcome = await self._fetch(src)
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # retrieved: waiters re-raise it
            raise
        finally:
            self.inflight.pop(key, None)
        self.outcomes[key] = outcome
        fut.set_result(outcome)
        return outcome, True

    async def _one(self, ref: dict) -> None:
        blocked = page_opt_out(ref)
        if blocked is not None:
            reason, detail = blocked
            row = self._row(ref, {"drop_reason": reason, "error": detail}, False)
            self.journal.add(row)
        else:
            src = ref["src"] or ""
            outcome, fresh = await self._outcome(src)
            row = self._row(ref, outcome, True)
            self.journal.add(row, url_key(src), outcome if fresh else None)
        self.rows[row["id"]] = row
        if self.journal.pending >= self.cfg.commit_every:
            self.journal.commit()
            self._report()

    def _report(self) -> None:
        if self.progress is not None:
            self.progress(
                {"rows": len(self.rows), "total": len(self.refs), "requests": self.requests}
            )

    async def run(self, todo: list[dict]) -> None:
        # Refs are taken round-robin over their servers (rows are still output in input order).
        lanes = _Lanes(todo, self.cfg.per_host_connections)

        async def worker() -> None:
            while (got := await lanes.next()) is not None:
                key, ref = got
                try:
                    await self._one(ref)
                finally:
                    lanes.done(key)

        gate = HeaderGate(self.cfg.agent, self.cfg.training_agent)
        crawl_cfg = self.cfg.crawl_config()
        async with Downloader(crawl_cfg, header_gate=gate) as d:
            at = next(i for i, layer in enumerate(d.layers) if isinstance(layer, RobotsLayer))
            d.layers.insert(at + 1, TrainingConsentLayer(self.cfg.training_agent))
            at = next(i for i, layer in enumerate(d.layers) if type(layer) is RetryLayer)
            d.layers[at] = ImageRetryLayer(
                crawl_cfg.max_retries, d.politeness, crawl_cfg.max_retry_after
            )
            self.downloader = d
            workers = [asyncio.create_task(worker()) for _ in range(self.cfg.concurrency)]
            try:
                await asyncio.gather(*workers)
            finally:
                for w in workers:
                    w.cancel()
                self.journal.commit()
                self._report()


def _table(rows: list[dict]) -> pa.Table:
    return pa.table(
        {f.name: pa.array([r.get(f.name) for r in rows], type=f.type) for f in FETCHED_SCHEMA},
        schema=FETCHED_SCHEMA,
    )


async def fetch_images_async(
    refs: Iterable[dict],
    out_dir: str | Path,
    cfg: ImageFetchConfig | dict | None = None,
    *,
    resume: bool = False,
    progress: Callable[[dict], None] | None = None,
    on_image: OnImage | None = None,
    inputs: Iterable[str | Path] = (),
) -> dict:
    """`fetch_images` for callers already inside an event loop."""
    cfg = ImageFetchConfig.from_any(cfg)
    refs = list(refs)
    _check_refs(refs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    journal = open_journal(out, _fingerprint(refs, cfg), resume)
    if resume:  # a run killed while writing an image leaves its temporary file behind
        for tmp in (out / IMAGES).glob("*/.*.tmp"):
            tmp.unlink(missing_ok=True)
    started = time.monotonic()
    run = _Run(refs, out, cfg, journal, progress, on_image)
    taken = run.rejudge(refs) if resume else set()
    try:
        limit = cfg.max_images
        todo, skipped, fetchable = [], {}, 0
        for ref in refs:
            wants_fetch = page_opt_out(ref) is None
            if wants_fetch and (bad := unusable_src(ref.get("src"))):
                # a src no connection could use ('http://a..test/x.png'): one recorded row
                skipped[ref["id"]] = run._row(
                    ref, {"drop_reason": "fetch_error", "error": f"bad-url: {bad}"}, True
                )
                continue
            if wants_fetch and limit is not None and fetchable >= limit:
                detail = f"not-fetched: max_images={limit} reached"
                skipped[ref["id"]] = run._row(
                    ref, {"drop_reason": "fetch_error", "error": detail}, True
                )
                continue
            fetchable += wants_fetch
            if ref["id"] not in run.rows:
                todo.append(ref)
        await run.run(todo)
    finally:
        run.pool.shutdown(wait=True)
        journal.close()
    rows = [run.rows.get(r["id"]) or skipped[r["id"]] for r in refs]
    run.drop_unused(taken)
    # Atomic, with its manifest written last (an old manifest never stands over new rows).
    write_parquet(_table(rows), out / FETCHED, inputs=inputs, config=cfg.model_dump(mode="json"))
    elapsed = time.monotonic() - started
    reasons = Counter(r["drop_reason"] for r in rows if r["drop_reason"])
    stored = sum(1 for r in rows if r["image_path"])
    with_faces = {r["image_path"] for r in rows if r["image_path"] and r["face_count"]}
    return {
        "rows": len(rows),
        "stored": stored,
        "images_stored": len({r["image_path"] for r in rows if r["image_path"]}),
        "images_with_faces_blurred": len(with_faces),
        "requests": run.requests,
        "resumed_rows": run.resumed,
        "drop_reasons": dict(sorted(reasons.items())),
        "training_allowed": sum(1 for r in rows if r["training_allowed"]),
        "bytes": sum(r["bytes"] or 0 for r in rows),
        "elapsed_s": round(elapsed, 3),
        "refs_per_s": round(len(todo) / elapsed, 1) if elapsed > 0 else None,
    }


def fetch_images(
    refs: Iterable[dict],
    out_dir: str | Path,
    cfg: ImageFetchConfig | dict | None = None,
    *,
    resume: bool = False,
    progress: Callable[[dict], None] | None = None,
    on_image: OnImage | None = None,
    inputs: Iterable[str | Path] = (),
) -> dict:
    """Fetch, check and store the images of `refs`; write `<out_dir>/fetched.parquet` and its
    manifest (`inputs`: the datasets the refs came from; config: the fetch's); return a summary.

    `refs`: dicts with id, doc_id, src, alt, training_allowed (the page's flag) and optionally
    noai / noimageai (the page's directives); `load_refs(extract_dir)` builds them. One output row
    per ref, in input order (see the module docstring for the drop reasons). `resume=True`
    continues a killed run in the same `out_dir`; without it an existing run there is an error.
    `progress` is called with {'rows', 'total', 'requests'} after each journal commit.
    `on_image(path, image)` is called from a worker thread for each image stored in this run
    whose stored file decodes to exactly `image` (e.g. `training.clip.ClipScorer.keep`: scoring
    then reuses this decode, its resize done here while other images are fetched).
    """
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(
            fetch_images_async(
                refs,
                out_dir,
                cfg,
                resume=resume,
                progress=progress,
                on_image=on_image,
                inputs=inputs,
            )
        )
    finally:
        _close_loop(loop)


CLOSE_WAIT_S = 10.0  # how long tasks left over after the run may take to end once cancelled


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what the run left and close the loop, waiting at most CLOSE_WAIT_S: asyncio.run
    waits for every cancelled task without a bound, and a demo hung for 36 minutes there after
    a store step raised, hiding the error. Tasks still running then are named in the log."""
    try:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            _, stuck = loop.run_until_complete(asyncio.wait(pending, timeout=CLOSE_WAIT_S))
            if stuck:
                logging.getLogger(__name__).warning(
                    "image fetch: %d task(s) did not end within %.0f s of cancellation: %s",
                    len(stuck),
                    CLOSE_WAIT_S,
                    ", ".join(sorted(t.get_coro().__qualname__ for t in stuck)),
                )
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()
