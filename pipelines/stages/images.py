"""Image-text stages: `refinery images build` (consent-checked fetch, decode, captions, dedup,
CLIP score; pairs + filtered interleaved documents), `refinery clip train` (a CLIP trained here
with open_clip on the kept pairs), `refinery images domains` (knowledge-domain selection), and
their assets image_pairs (partitioned by the image's own server) -> clip_model -> domain_images,
and image_pairs -> interleaved_documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from common import lake as lake_mod
from common.pairs import CLIP_CUT, SHARD_PREFIX, kept_pairs, pairs_files, settled_rows
from filters.images.interleaved import check_interleaved_source, write_interleaved
from pipelines.stage import Check, Lake, Params, Stage, Summary, param

IMAGE_SHARDS = 4  # image_pairs partitions: by the image's server (crawlers.images.shards)


class ImagesBuildParams(Params):
    docs: Path | None = param(
        None, input="documents", help="An `extract` output directory (image_refs.parquet, ...)."
    )
    out: Path | None = param(
        None,
        output=True,
        help="Output directory (pairs.parquet, interleaved.parquet, images/); default: lake "
        "images/pairs/.",
    )
    clip: str | None = param(
        None,
        help="CLIP model: a `refinery clip train` directory, or an open_clip NAME:PRETRAINED / "
        "hf-hub id (default: none, clip_score is null and no score cut applies).",
    )
    min_score: float | None = param(None, finite=True, help="Drop kept pairs scoring below this.")
    top_fraction: float | None = param(
        None,
        gt=0,
        max=1,
        finite=True,
        help="Keep the top share, in (0, 1], of the scored pairs (DataComp: 0.3).",
    )
    agent: str = param("RefineryBot", help="Crawl product token (robots.txt, User-Agent).")
    training_agent: str = param("RefineryBot-Extended", help="Training product token.")
    delay: float = param(1.0, min=0, help="Minimum seconds between requests to one server.")
    allow_private_networks: bool = param(False, help="Allow loopback/private image addresses.")
    max_images: int | None = param(None, min=0, help="Image refs fetched, in input order.")
    face_detector: str = param(
        "mtcnn",
        help="Faces blurred before storage are found by mtcnn (MTCNN, the default) or haar "
        "(OpenCV's cascades); bench/faces.py compares them.",
    )
    face_angles: list[float] | None = param(
        None,
        help="Extra in-plane turns (degrees) searched for faces, one or more after the flag "
        "(--face-angles -25 25) or the flag repeated; default: the detector's own (mtcnn -25 25 "
        "90 -90 180: faces turned up to about 45 degrees, on their side and upside down, those "
        "from twice the smallest face up). -25 25 alone costs about 0.7x the face search's CPU "
        "but finds 0.42 of faces turned 60-180 degrees against 0.79 (bench/faces.py --quick "
        "--sideways).",
    )
    shard: str = param(
        "0/1",
        help="K/N: only the images whose server (an IP in any spelling, or a registered "
        "domain) hashes to K of N; names are not resolved, so names of different domains on one "
        "machine, and redirect targets, may be fetched by two shards at once, each keeping its "
        "own delay.",
        asset=False,
    )
    resume: bool = param(False, help="Continue a build in --out after a kill.")
    config: Path | None = param(
        None, file=True, help="Image filter config YAML (captions, dedup, ...)."
    )
    runner: str | None = param(
        None,
        resource="beam.runner_or_none",
        help="Score with CLIP on this Beam runner (DirectRunner, DaskRunner, ...); default: in "
        "process. Unknown options go to Beam.",
    )
    beam_args: list[str] = param([], extra_args=True, resource="beam.options")


class ImagesBuildSummary(Summary):
    docs: str
    shard: str = "0/1"
    refs: int
    kept: int
    stored: int
    faces_blurred: int = 0
    dropped: dict[str, int]
    dedup_rate: float
    images_per_s: float
    interleaved_documents: int | None = None
    scored: bool
    clip_score_hist: str | None = None

    def metadata(self) -> dict[str, Any]:
        return self.model_dump(exclude={"outputs", "docs"})


def _shard(p: ImagesBuildParams, lake: Lake) -> str:
    """The K/N of this run: the Dagster partition of IMAGE_SHARDS, else --shard."""
    from crawlers.images.shards import parse_shard

    if lake.partition is not None:
        return f"{int(lake.partition)}/{IMAGE_SHARDS}"
    k, n = parse_shard(p.shard)
    return f"{k}/{n}"


def _shard_refs(refs: list[dict], shard: str) -> list[dict]:
    from crawlers.images.shards import parse_shard, shard_refs

    return shard_refs(refs, *parse_shard(shard))


def _remove(path: Path) -> None:
    import shutil

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)  # partitions may clear the same path at once
    else:
        path.unlink(missing_ok=True)


def _lake_out(base: Path, k: int, n: int) -> Path:
    """The lake's output directory of shard k of n: images/pairs, or images/pairs/shard=<k>."""
    return base if n == 1 else base / f"{SHARD_PREFIX}{k}"


def _clear_lake_out(out: Path, k: int, n: int, resume: bool) -> None:
    """Clear the lake's images/pairs of whatever the pairs of `out` (`_lake_out`) would mix with
    (`common.pairs.pairs_files` reads every pairs.parquet under it): an unsharded run removes
    the shard=* builds, a shard run the unsharded build's outputs (pairs, fetched, interleaved,
    images, journal) and the shard builds of another shard count; without --resume a run
    starts its own afresh."""
    if n == 1:
        if out.exists() and not resume:
            _remove(out)
        for entry in out.glob(f"{SHARD_PREFIX}*"):
            _remove(entry)
        return
    base = out.parent
    for entry in sorted(base.iterdir()) if base.is_dir() else ():
        if not entry.name.startswith(SHARD_PREFIX):
            _remove(entry)  # the unsharded build's
        elif entry != out and _other_count(entry, n):
            _remove(entry)
    if out.exists() and not resume:
        _remove(out)


def _other_count(shard_dir: Path, n: int) -> bool:
    """Whether `shard_dir` (shard=<j>) belongs to a build of another shard count than n: j is n
    or more, or its pairs.parquet's manifest says another N. (A shard build of another count
    that did not finish says nothing; `pairs_files` then refuses it, naming the fix.)"""
    j = shard_dir.name[len(SHARD_PREFIX) :]
    if not j.isdigit():
        return False
    if int(j) >= n:
        return True
    try:
        shard = str(lake_mod.read_manifest(shard_dir / "pairs.parquet").get("shard", ""))
    except (OSError, ValueError):
        return False
    return shard.count("/") == 1 and shard.split("/")[1] != str(n)


def _scorer(spec: str | None, runner: str | None = None, beam_args: list[str] = ()):
    """(score, on_image): the CLIP score function, and what the fetch hands each image it
    decodes to (in process: the scorer keeps it resized, so no stored file is decoded again)."""
    if not spec:
        return None, None
    if runner:
        from pipelines.beam.images import beam_scorer

        return beam_scorer(spec, [f"--runner={runner}", *beam_args]), None
    from training.clip import ClipScorer

    scorer = ClipScorer(spec)
    return scorer.score, scorer.keep


def _hist(scores: list[float], path: Path) -> str | None:
    if not scores:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3), dpi=100)
    ax.hist(scores, bins=30)
    ax.set_xlabel("CLIP score (cosine)")
    ax.set_ylabel("pairs")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return str(path)


def images_build(p: ImagesBuildParams, lake: Lake) -> ImagesBuildSummary:
    """Fetch, decode, caption, de-duplicate and score the images of an extract output."""
    import time
    from collections import Counter

    import pyarrow.parquet as pq

    from common.consent import Consent, ledger_files_for
    from crawlers.images import ImageFetchConfig, fetch_images, load_refs
    from crawlers.images.faces import DEFAULT_ANGLES
    from filters.images import load_image_config
    from filters.images.pairs import LOW_CLIP_SCORE, build_pairs, pairs_table, score_cut

    if p.min_score is not None and p.top_fraction is not None:
        raise ValueError("--min-score and --top-fraction exclude each other: give one")
    if p.face_detector not in DEFAULT_ANGLES:
        raise ValueError(
            f"--face-detector {p.face_detector!r} is not a detector: give one of "
            + ", ".join(DEFAULT_ANGLES)
        )
    docs = Path(p.docs) if p.docs else lake.root / "extract"
    shard = _shard(p, lake)
    k, n = shard.split("/")
    if p.out is not None:
        out = Path(p.out)
    else:
        out = _lake_out(lake.root / "images" / "pairs", int(k), int(n))
    cfg = load_image_config(p.config)
    # The consent rule for each ref: its own flag, its document's, and the ledgers of the lake
    # and of the lake the extract output came from.
    consent = Consent.load(lake.root, ledger_files_for(lake.root, docs))
    refs = _shard_refs(load_refs(docs, consent), shard)
    fetch_cfg = ImageFetchConfig(
        agent=p.agent,
        training_agent=p.training_agent,
        delay=p.delay,
        allow_private_networks=p.allow_private_networks,
        max_images=p.max_images,
        faces={"detector": p.face_detector}
        | ({"angles": p.face_angles} if p.face_angles is not None else {}),
    )
    writes_interleaved = p.out is not None or n == "1"  # an unsharded run writes it too
    if writes_interleaved:  # before the fetch: a missing input must not end a finished fetch
        check_interleaved_source(docs)
    score, on_image = _scorer(p.clip, p.runner, p.beam_args)
    if p.out is None:  # after every check: a refused run leaves the lake's pairs as they were
        _clear_lake_out(out, int(k), int(n), p.resume)
    started = time.perf_counter()
    fetched_summary = fetch_images(
        refs,
        out,
        fetch_cfg,
        resume=p.resume,
        on_image=on_image,
        inputs=[str(docs / "image_refs.parquet"), str(docs / "documents.parquet")],
    )
    fetched = pq.read_table(out / "fetched.parquet").to_pylist()
    where = {r["id"]: r for r in refs}
    for row in fetched:  # the page and position the image sat at, for the interleaved filter
        ref = where.get(row["id"], {})
        row.update({k: ref.get(k) for k in ("url", "position", "surrounding_text")})
    rows = build_pairs(
        fetched,
        out,
        cfg,
        score=score,
        min_score=p.min_score,
        top_fraction=p.top_fraction,
    )
    inputs = [str(docs / "image_refs.parquet"), str(docs / "documents.parquet")]
    # The score cut build_pairs applied, over the same rows (those the de-duplication left
    # kept, now kept or low_clip_score): readers promote a duplicate only if it is not under it.
    cut = None
    if score is not None:
        live = [r["clip_score"] for r in rows if r["drop_reason"] in (None, LOW_CLIP_SCORE)]
        cut = score_cut(live, p.min_score, p.top_fraction)
    lake_mod.write_parquet(
        pairs_table(rows),
        out / "pairs.parquet",
        inputs=inputs,
        config=cfg.model_dump(),
        # shard: pairs_files tells shard builds of another N by it; clip_score_cut:
        # common.pairs.settle
        extra={"shard": shard, CLIP_CUT: cut},
    )
    seconds = time.perf_counter() - started
    n_docs = None
    if writes_interleaved:  # beside the pairs
        n_docs = write_interleaved(docs, [out / "pairs.parquet"], out, cfg)
    reasons = Counter(r["drop_reason"] for r in rows if r["drop_reason"])
    kept = sum(1 for r in rows if r["drop_reason"] is None)
    dups = reasons.get("duplicate", 0) + reasons.get("repeated_url", 0)
    scores = [r["clip_score"] for r in rows if r["clip_score"] is not None]
    lake.log(f"images {out}: {len(rows)} refs, {kept} kept, dropped {dict(reasons)}")
    return ImagesBuildSummary(
        outputs={"image_pairs": str(out)},
        docs=str(docs),
        shard=shard,
        refs=len(rows),
        kept=kept,
        stored=fetched_summary.get("images_stored", 0),
        faces_blurred=fetched_summary.get("images_with_faces_blurred", 0),
        dropped=dict(sorted(reasons.items())),
        dedup_rate=dups / (kept + dups) if kept + dups else 0.0,
        images_per_s=round(len(rows) / seconds, 2) if seconds > 0 else 0.0,
        interleaved_documents=n_docs,
        scored=p.clip is not None,
        clip_score_hist=_hist(scores, out / "clip_scores.png"),
    )


# The columns the interleaved filter reads, by kind (common.inputs).
class InterleavedParams(Params):
    docs: Path | None = param(None, input="documents", help="An `extract` output directory.")
    pairs: Path | None = param(None, input="image_pairs", help="An `images build` output.")
    out: Path | None = param(None, output=True, help="Output directory.")
    config: Path | None = param(None, file=True, help="Image filter config YAML.")


class InterleavedSummary(Summary):
    documents_in: int
    documents_kept: int
    dropped: dict[str, int]


def interleaved(p: InterleavedParams, lake: Lake) -> InterleavedSummary:
    """Filter the interleaved documents by the image pairs (dropped images leave their block)."""
    from collections import Counter

    import pyarrow.parquet as pq

    from filters.images import load_image_config

    docs = Path(p.docs) if p.docs else lake.root / "extract"
    pairs = Path(p.pairs) if p.pairs else lake.root / "images" / "pairs"
    out = Path(p.out) if p.out else lake.root / "images" / "interleaved"
    from common.consent import Consent, ledger_files_for

    consent = Consent.load(lake.root, ledger_files_for(lake.root, pairs))
    n = write_interleaved(docs, pairs_files(pairs), out, load_image_config(p.config), consent)
    report = pq.read_table(out / "interleaved_report.parquet").to_pylist()
    dropped = Counter(r["drop_reason"] for r in report if r["drop_reason"])
    return InterleavedSummary(
        outputs={"interleaved_documents": str(out / "interleaved.parquet")},
        documents_in=len(report),
        documents_kept=n,
        dropped=dict(sorted(dropped.items())),
    )


class ClipTrainParams(Params):
    pairs: list[Path] = param(
        [], input="image_pairs", help="An `images build` output (repeatable): its kept pairs."
    )
    out: Path | None = param(None, output=True, help="Model directory (what --clip loads).")
    model: str = param(
        "refinery-tiny", help="Model to train: refinery-tiny, or a spec to fine-tune."
    )
    steps: int = param(300, min=1, help="Optimizer steps.")
    batch_size: int = param(64, min=2, help="Pairs per contrastive batch.")
    warmup: int | None = param(
        None,
        min=0,
        help="Warm-up steps (linear to the peak rate, then cosine to 0); default a tenth of the "
        "run.",
    )
    seed: int = param(0, help="Seed of the model's initial weights and the batch order.")


class ClipTrainSummary(Summary):
    pairs: int
    steps: int
    final_loss: float | None = None
    details: dict[str, Any] = {}

    def metadata(self) -> dict[str, Any]:
        return self.model_dump(exclude={"outputs", "details"})


def clip_train(p: ClipTrainParams, lake: Lake) -> ClipTrainSummary:
    """Train a CLIP with open_clip's own model and loss on kept image-text pairs."""
    from training.clip import train_clip

    if not p.pairs:
        raise ValueError("--pairs: give at least one `images build` output")
    from common.consent import Consent, ledger_files_for

    files = [f for d in p.pairs for f in pairs_files(d)]
    consent = Consent.load(lake.root, ledger_files_for(lake.root, *p.pairs))
    pairs = [(k["image_file"], k["caption"]) for k in kept_pairs(files, consent)]
    if len(pairs) < 2:
        raise ValueError(
            f"--pairs {', '.join(map(str, p.pairs))}: {len(pairs)} kept pairs; need 2+"
        )
    out = Path(p.out) if p.out else lake.root / "models" / "clip"
    s = train_clip(
        pairs,
        out,
        model=p.model,
        steps=p.steps,
        batch_size=p.batch_size,
        warmup=p.warmup,
        seed=p.seed,
    )
    lake_mod.write_manifest(
        out,
        rows=len(pairs),
        inputs=[str(f) for f in files],
        config=p.model_dump(mode="json"),
        extra={"kind": "clip-model"},
    )
    return ClipTrainSummary(
        outputs={"clip_model": str(out)},
        pairs=len(pairs),
        steps=p.steps,
        final_loss=s.get("final_loss"),
        details=s,
    )


class DomainsParams(Params):
    pairs: Path | None = param(None, input="image_pairs", help="An `images build` output.")
    spec: Path | None = param(None, help="Domains YAML (default: filters/images/domains.yaml).")
    clip: str | None = param(None, input="clip_model", help="CLIP model (directory or spec).")
    out: Path | None = param(None, output=True, help="Output directory (domain_images.parquet).")


class DomainsSummary(Summary):
    candidates: int
    selected: dict[str, int]
    opted_out_skipped: int = 0  # kept pairs the consent rule refuses: never scored nor written


def domains(p: DomainsParams, lake: Lake) -> DomainsSummary:
    """Select knowledge-domain images: alt-text keywords, then CLIP similarity to the domain's
    prompts by a margin over the other domains. Only pairs the consent rule allows (their flag
    and the consent ledgers of the lake and of the pairs' own lake) are scored and written."""
    from collections import Counter

    import pyarrow as pa

    from common.consent import Consent, ledger_files_for
    from filters.images import load_domain_spec, select_domains
    from filters.images.domains import domain_table

    pairs = Path(p.pairs) if p.pairs else lake.root / "images" / "pairs"
    spec_path = p.spec or Path(__file__).resolve().parents[2] / "filters/images/domains.yaml"
    spec = load_domain_spec(spec_path)
    if not p.clip:
        raise ValueError("--clip: a CLIP model is needed (`refinery clip train` makes one)")
    from common.inputs import BadImagePath, resolve_image
    from training.clip import ClipScorer

    similarity = ClipScorer(p.clip).similarity
    files = pairs_files(pairs)
    consent = Consent.load(lake.root, ledger_files_for(lake.root, pairs))
    rows, by_id, skipped = [], {}, 0
    # kept as every reader of pairs takes them (common.pairs.settled_rows: an allowed copy of an
    # image whose kept row the ledger opted out is kept instead; an image kept in two shards once)
    for f, settled in settled_rows(files, consent):
        for r in settled:
            if r["drop_reason"] is None:
                if not consent.allows(r):  # the one rule: its flag, then the ledgers
                    skipped += 1
                    continue
                try:  # an image of this dataset only: absolute, '..' or a symlink out is none
                    resolve_image(r["image_path"], f.parent)
                except BadImagePath:
                    continue
                r["image_path"] = str(f.parent / r["image_path"])
                rows.append(r)
                by_id[r["id"]] = r
    selected = select_domains(rows, spec, similarity, image_root="/")
    table = domain_table(selected)
    # The pair's caption, consent and keys travel with it: the mixture's domain_image_text
    # bucket reads text, training_allowed is its outer filter, and doc_id and src let a later
    # reader match the consent ledger (by document and by image URL) without the pairs.
    ids = table["id"].to_pylist()
    for name in ("caption", "doc_id", "src"):
        table = table.append_column(name, pa.array([by_id[i].get(name) for i in ids], pa.string()))
    table = table.append_column("training_allowed", pa.array([True] * len(ids), pa.bool_()))
    out = Path(p.out) if p.out else lake.root / "images" / "domain"
    inputs = [str(spec_path), str(p.clip), *map(str, files)]
    lake_mod.write_parquet(table, out / "domain_images.parquet", inputs=inputs)
    counts = Counter(r["domain"] for r in selected if r["selected"])
    return DomainsSummary(
        outputs={"domain_images": str(out / "domain_images.parquet")},
        candidates=len(selected),
        selected=dict(sorted(counts.items())),
        opted_out_skipped=skipped,
    )


def _pairs_consent(summary: ImagesBuildSummary, lake: Lake):
    from crawlers.images import checks

    return checks.image_pairs_consent(Path(summary.outputs["image_pairs"]))


def _pairs_faces(summary: ImagesBuildSummary, lake: Lake):
    from crawlers.images import checks

    return checks.image_pairs_faces(Path(summary.outputs["image_pairs"]))


def _pairs_accounted(summary: ImagesBuildSummary, lake: Lake):
    import pyarrow.parquet as pq

    from common.checks import CheckOutcome
    from crawlers.images import load_refs

    refs = len(_shard_refs(load_refs(summary.docs), summary.shard))
    rows = pq.read_metadata(Path(summary.outputs["image_pairs"]) / "pairs.parquet").num_rows
    return CheckOutcome(
        refs == rows,
        f"{refs} image refs in (this shard), {rows} pairs rows out",
        {"refs": refs, "rows": rows},
    )


IMAGES_BUILD = Stage(
    name="images build",
    params=ImagesBuildParams,
    run=images_build,
    beam_job=True,
    description=images_build.__doc__,
    outputs=("image_pairs",),
    inputs=("documents",),
    group="images",
    partitions=[str(k) for k in range(IMAGE_SHARDS)],
    # an ordering only (a backfill of the crawl reaches the images): pairs shard k holds the
    # images of the servers hashing to k, whichever crawl shard their pages came from
    partitions_follow="raw_pages",
    checks=(
        Check(
            "no_opted_out_image",
            "image_pairs",
            _pairs_consent,
            "No image the training token may not use is stored or kept.",
        ),
        Check(
            "faces_blurred",
            "image_pairs",
            _pairs_faces,
            "Faces were searched in every stored image; none with a face is stored as fetched.",
        ),
        Check(
            "refs_accounted",
            "image_pairs",
            _pairs_accounted,
            "One pairs row per image ref: no image is silently lost.",
        ),
    ),
    output_descriptions={
        "image_pairs": "Image-text pairs of one image-server shard (lake images/pairs/shard=<k>/): "
        "one row per image ref whose server hashes to k, kept or with its drop reason; images "
        "stored by the sha256 of the fetched bytes, faces blurred (face_count, face_boxes)."
    },
)
INTERLEAVED = Stage(
    name="images interleaved",
    params=InterleavedParams,
    run=interleaved,
    description=interleaved.__doc__,
    outputs=("interleaved_documents",),
    inputs=("documents", "image_pairs"),
    group="images",
)
CLIP_TRAIN = Stage(
    name="clip train",
    params=ClipTrainParams,
    run=clip_train,
    description=clip_train.__doc__,
    outputs=("clip_model",),
    inputs=("image_pairs",),
    group="images",
)
DOMAINS = Stage(
    name="images domains",
    params=DomainsParams,
    run=domains,
    description=domains.__doc__,
    outputs=("domain_images",),
    inputs=("image_pairs", "clip_model"),
    group="images",
)
