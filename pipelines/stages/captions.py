"""Caption stages: `refinery captioner train` (a CoCa trained here with open_clip's own model and
loss on the kept image pairs; asset captioner_model) and `refinery synth captions` (keywords,
brief and detailed captions of the kept pairs, each scored with the project's CLIP and filtered;
asset synthetic_captions). Without a teacher the detailed level is absent, and the summary says
why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from common import lake as lake_mod
from pipelines.stage import Check, Lake, Params, Stage, Summary, param
from pipelines.stages.synth import (
    TeacherFigures,
    TeacherOptions,
    input_consent,
    teacher_figures,
)


def _pairs(pairs: list[Path], lake: Lake) -> list[Path]:
    return [Path(p) for p in pairs] or [lake.root / "images" / "pairs"]


class CaptionerTrainParams(Params):
    pairs: list[Path] = param(
        [],
        input="image_pairs",
        help="An `images build` output (repeatable): its kept pairs; default: lake images/pairs.",
    )
    out: Path | None = param(
        None,
        output=True,
        help="Model directory (what --captioner loads); default: lake models/captioner.",
    )
    # 400 x 16 at 2e-3: on the demo lake's 200 pairs, 110 of 200 greedy captions equal the alt
    # text (word recall 0.82) against 36 for 200 x 32 at 3e-3, in about the same time.
    steps: int = param(400, min=1, help="Optimizer steps.")
    batch_size: int = param(16, min=2, help="Pairs per batch.")
    lr: float = param(2e-3, help="Peak learning rate.")
    warmup: int | None = param(
        None,
        min=0,
        help="Warm-up steps (linear to the peak rate, then cosine to 0); default a tenth of the "
        "run.",
    )
    seed: int = param(0, help="Seed of the model's initial weights and the batch order.")


class CaptionerTrainSummary(Summary):
    pairs: int
    steps: int
    first_loss: float
    final_loss: float
    final_caption_loss: float
    seconds: float
    card: str
    details: dict[str, Any] = {}

    def metadata(self) -> dict[str, Any]:
        return self.model_dump(exclude={"outputs", "details"})


def captioner_train(p: CaptionerTrainParams, lake: Lake) -> CaptionerTrainSummary:
    """Train a CoCa captioner (open_clip.CoCa, CoCaLoss) on the kept image-text pairs."""
    from common.pairs import pairs_files
    from training.coca import train_coca

    files = pairs_files(_pairs(p.pairs, lake))
    out = Path(p.out) if p.out else lake.root / "models" / "captioner"
    s = train_coca(
        files,
        out,
        steps=p.steps,
        seed=p.seed,
        batch_size=p.batch_size,
        lr=p.lr,
        warmup=p.warmup,
        device="cpu",
        consent=input_consent(lake, *files),  # the pairs' flags and the consent ledger
    )
    lake_mod.write_manifest(
        out,
        rows=s["pairs"],
        inputs=[str(f) for f in files],
        config=p.model_dump(mode="json"),
        extra={"kind": "captioner-model"},
    )
    lake.log(
        f"captioner {out}: {s['pairs']} pairs, loss {s['first_loss']:.3g} -> {s['final_loss']:.3g}"
    )
    return CaptionerTrainSummary(
        outputs={"captioner_model": str(out)},
        pairs=s["pairs"],
        steps=s["steps"],
        first_loss=s["first_loss"],
        final_loss=s["final_loss"],
        final_caption_loss=s["final_caption_loss"],
        seconds=s["seconds"],
        card=f"CoCa trained here on {s['pairs']} sample-web pairs",
        details=s,
    )


class CaptionsParams(TeacherOptions):
    pairs: list[Path] = param(
        [],
        input="image_pairs",
        help="An `images build` output (repeatable); default: lake images/pairs.",
    )
    out: Path | None = param(
        None, output=True, help="Output directory (captions.parquet); default: lake synth/captions."
    )
    levels: str = param(
        "keywords,brief,detailed", help="Comma-separated levels: keywords, brief, detailed."
    )
    captioner: Path | None = param(
        None,
        input="captioner_model",
        help="A `refinery captioner train` directory; default: lake models/captioner.",
    )
    clip: str | None = param(
        None,
        input="clip_model",
        help="CLIP model that scores every caption (a `refinery clip train` directory or an "
        "open_clip spec); default: lake models/clip.",
    )
    min_score: float | None = param(
        0.5,
        help="Captions whose CLIP score (cosine) is below this get status low_clip_score. 0.5: "
        "on the demo lake the project's CLIP scored 99.5% of the true alt texts and 20% of "
        "shuffled ones at or above it; -1 keeps every caption.",
    )
    dense: int | None = param(
        None,
        help="Detailed level by the dense-caption recipe: a 2x2 or 3x3 grid of regions, each "
        "captioned by the teacher, then summarised with their positions (2 or 3; needs a teacher).",
    )


class CaptionsSummary(TeacherFigures):
    pairs: int
    opted_out_skipped: int
    rows: int
    ok: int
    rejected: int
    rejects: dict[str, int]
    levels: dict[str, dict[str, Any]]
    absent_levels: dict[str, str]
    captioner: str | None = None
    teacher: str | None = None
    seconds: float
    captions_per_s: float


def captions(p: CaptionsParams, lake: Lake) -> CaptionsSummary:
    """Keywords, brief and detailed captions of the kept pairs, scored with the project's CLIP."""
    from synth.captions import make_captions

    pairs = _pairs(p.pairs, lake)
    levels = [lv.strip() for lv in p.levels.split(",") if lv.strip()]
    out = Path(p.out) if p.out else lake.root / "synth" / "captions"
    if p.out is None:  # the lake's dataset is rewritten by a new run
        (out / "captions.parquet").unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    consent = input_consent(lake, *pairs)
    teacher = p.teacher(out / "_teacher", consent)
    if p.dense is not None and teacher is None:
        raise ValueError("--dense needs a teacher (--teacher-url and --teacher-model)")
    captioner = p.captioner
    default_captioner = lake.root / "models" / "captioner"
    if captioner is None and any(lv in ("keywords", "brief") for lv in levels):
        if (default_captioner / "open_clip_config.json").is_file() or teacher is None:
            captioner = default_captioner  # without a teacher, the captioner is needed
    clip = p.clip or str(lake.root / "models" / "clip")
    from common.pairs import pairs_files

    files = pairs_files(pairs)
    s = make_captions(
        files,
        out,
        levels,
        captioner=captioner,
        clip=clip,
        min_score=p.min_score,
        teacher=teacher,
        dense=p.dense,
        device="cpu",
        inputs=[*map(str, files), *([str(captioner)] if captioner else []), clip],
        on_progress=lake.log,
        consent=consent,
    )
    figures = {k: s[k] for k in CaptionsSummary.model_fields if k in s and k != "teacher_usage"}
    figures.update(teacher_figures(teacher))
    return CaptionsSummary(**figures)


def _caption_pairs(
    summary: CaptionsSummary, lake: Lake | None = None
) -> tuple[list[dict], set[str]]:
    """(captions rows, ids of the kept, consented pairs of the pairs files it read: the one
    consent rule, with the consent ledger as the run read it)."""
    import pyarrow.parquet as pq

    path = Path(summary.outputs["synthetic_captions"])
    files = [f for f in lake_mod.read_manifest(path)["inputs"] if f.endswith("pairs.parquet")]
    rule = input_consent(lake, *map(Path, files)) if lake is not None else None
    allowed = {
        r["id"]
        for f in files
        for r in pq.read_table(f).to_pylist()
        if r["drop_reason"] is None and (rule.allows(r) if rule else r["training_allowed"] is True)
    }
    return pq.read_table(path).to_pylist(), allowed


def _captions_consent(summary: CaptionsSummary, lake: Lake):
    """Every caption is of a kept pair whose training_allowed is true: no other was read."""
    from common.checks import CheckOutcome

    rows, allowed = _caption_pairs(summary, lake)
    bad = sorted({r["pair_id"] for r in rows} - allowed)
    return CheckOutcome(
        not bad,
        f"{len(bad)} captioned pairs not kept or not consented"
        + (f" (first: {bad[0]})" if bad else ""),
        {"captioned_not_allowed": len(bad), "opted_out_skipped": summary.opted_out_skipped},
    )


def _captions_accounted(summary: CaptionsSummary, lake: Lake):
    """One row per kept, consented pair and level made, each `ok` or with its reason."""
    from collections import Counter

    from common.checks import CheckOutcome

    rows, allowed = _caption_pairs(summary, lake)
    keys = Counter((r["pair_id"], r["level"]) for r in rows)
    want = {(pid, level) for pid in allowed for level in summary.levels}
    ok = set(keys) == want and max(keys.values(), default=1) == 1
    ok = ok and all(r["status"] for r in rows)
    return CheckOutcome(
        ok,
        f"{len(allowed)} pairs x {len(summary.levels)} levels in, {len(rows)} rows out "
        f"({summary.ok} ok, {summary.rejected} rejects with their reason)",
        {"expected": len(want), "rows": len(rows)},
    )


CAPTIONER_TRAIN = Stage(
    name="captioner train",
    params=CaptionerTrainParams,
    run=captioner_train,
    description=captioner_train.__doc__,
    outputs=("captioner_model",),
    inputs=("image_pairs",),
    group="images",
    output_descriptions={
        "captioner_model": "A CoCa captioner (open_clip.CoCa and CoCaLoss, tiny config) trained "
        "here on the kept image pairs (lake models/captioner)."
    },
)
CAPTIONS = Stage(
    name="synth captions",
    params=CaptionsParams,
    run=captions,
    description=captions.__doc__,
    outputs=("synthetic_captions",),
    inputs=("image_pairs", "captioner_model", "clip_model"),
    group="synth",
    checks=(
        Check(
            "only_consented_pairs",
            "synthetic_captions",
            _captions_consent,
            "Only kept pairs whose training_allowed is true are captioned (or sent to a teacher).",
        ),
        Check(
            "captions_accounted",
            "synthetic_captions",
            _captions_accounted,
            "One row per kept, consented pair and level: ok or a reject with its reason.",
        ),
    ),
    output_descriptions={
        "synthetic_captions": "Captions of the kept pairs at three levels (keywords, brief, "
        "detailed), CLIP-scored, rejects kept with their reason (lake "
        "synth/captions/captions.parquet)."
    },
)
