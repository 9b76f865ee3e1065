"""The train stages' declarations: `refinery train pretrain|cpt|multimodal|long-context|
retrieval-data|retrieval-eval` and their assets. The drivers and the run-directory lifecycle live
in `training/runs.py`."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, ClassVar

from common import lake
from pipelines.stage import Check, Lake, Params, Stage, Summary, param
from training.runs import (
    UPSTREAM,
    latest_run,
    new_run_dir,
    resumable_run,
    run_retrieval_data,
    run_retrieval_eval,
    run_train,
    set_latest,
    stage_mixture_dir,
)
from training.train_config import STAGES

# --- declarations: `refinery train pretrain|cpt|multimodal|long-context|retrieval-data|
# retrieval-eval`, assets retrieval_documents and
# pretrained_model -> cpt_model -> multimodal_model -> long_context_model ---

STAGE_HELP = {
    "pretrain": "Pretrain from scratch on the pretraining mixture.",
    "cpt": "Continued pretraining from a pretrain run (--init), fresh optimiser and warm-up.",
    "multimodal": "Multimodal continued pretraining: decoder from a cpt run (--init), image "
    "tower from a CLIP model (--vision), vision-language adapter from scratch, on the "
    "multimodal mixture.",
    "long-context": "Context lengthening from a multimodal run (--init: its decoder; the vision "
    "tower and adapter are dropped) at a longer seq_len, raised RoPE base.",
}
# stage: (asset, its mixture asset, upstream model asset)
TRAIN_ASSETS = {
    "pretrain": ("pretrained_model", "pretrain_mixture", None),
    "cpt": ("cpt_model", "cpt_mixture", "pretrained_model"),
    "multimodal": ("multimodal_model", "multimodal_mixture", "cpt_model"),
    "long-context": ("long_context_model", "long_context_mixture", "multimodal_model"),
}


class RetrievalOptions(Params):
    """The synthetic in-context retrieval documents (training/longctx.py)."""

    docs: int = param(2000, min=1, help="Number of documents.")
    seed: int = param(0, help="Generator seed.")
    facts: int = param(6, min=1, help="Facts stated early.")
    queries: int = param(4, min=1, help="Late queries.")
    filler_min: int = param(
        20, min=0, help="Fewest filler sentences between facts and queries (see --filler-max)."
    )
    filler_max: int = param(30, min=0, help="Filler sentences between facts and queries.")
    values: str = param("digits", help="digits or words.")

    def doc_options(self) -> dict[str, Any]:
        return {
            "n_facts": self.facts,
            "n_queries": self.queries,
            "filler_sentences": (self.filler_min, self.filler_max),
            "values": self.values,
        }


class RetrievalDataParams(RetrievalOptions):
    out: Path | None = param(
        None,
        output=True,
        file=True,
        help="Parquet to write (default: lake synth/long/retrieval.parquet).",
    )


class RetrievalDataSummary(Summary):
    path: str
    documents: int
    mean_chars: float

    def text(self) -> str:
        return f"{self.documents} documents ({self.mean_chars:.0f} chars on average) -> {self.path}"


def retrieval_data(p: RetrievalDataParams, lake_: Lake) -> RetrievalDataSummary:
    """Write synthetic long documents for in-context retrieval (facts early, queries late)."""
    r = run_retrieval_data(
        p.out, n_docs=p.docs, seed=p.seed, lake_root=lake_.root, **p.doc_options()
    )
    return RetrievalDataSummary(outputs={"retrieval_documents": r["path"]}, **r)


class RetrievalEvalParams(RetrievalOptions):
    run: list[str] = param(help="NAME=RUN_DIR_OR_CHECKPOINT; repeat to compare (cpt=..., lc=...).")
    tokenizer: Path = param(help="The runs' tokenizer.json.")
    docs: int = param(64, min=1, help="Held-out documents.")
    seed: int = param(10_000, help="Held-out seed (not the training one).")


class RetrievalEvalSummary(Summary):
    results: dict[str, dict[str, Any]]

    def text(self) -> str:
        lines = [
            f"{name}: late-answer loss {r['loss']:.4f} (without the facts "
            f"{r['loss_without_facts']:.4f}, retrieval gain {r['retrieval_gain']:+.4f}) over "
            f"{r['answer_tokens']} tokens"
            for name, r in self.results.items()
        ]
        return "\n".join([*lines, json.dumps(self.results)])


def retrieval_eval(p: RetrievalEvalParams, lake_: Lake) -> RetrievalEvalSummary:
    """Loss on the answers of late queries in held-out retrieval documents, per checkpoint."""
    named = {}
    for item in p.run:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--run {item!r}: expected NAME=PATH")
        named[name] = path
    results = run_retrieval_eval(named, p.tokenizer, n_docs=p.docs, seed=p.seed, **p.doc_options())
    return RetrievalEvalSummary(results=results)


class TrainParams(Params):
    config: str = param(help="Training config YAML, or a packaged name: tiny, gpu.")
    data: Path | None = param(
        None,
        help="Mixture directory (manifest.json, shards/, eval/); default: the lake mixture the "
        "config names for this stage.",
    )
    out: Path | None = param(
        None,
        output=True,
        help="Run directory (metrics, eval, checkpoints); default: a new versioned run under "
        "lake runs/<stage>/.",
    )
    init: Path | None = param(
        None, help="Run directory (its latest checkpoint) or checkpoint file."
    )
    steps: int | None = param(None, min=1, help="Total steps of the run.")
    resume: bool = param(
        False, help="Continue the run in --out (lake: the newest run) from its latest checkpoint."
    )
    retrieval_eval_docs: int = param(
        0,
        min=0,
        help="long-context: late-query loss of this run and its --init on this many held-out "
        "retrieval documents made like the lake's (0: off).",
    )


class MultimodalTrainParams(TrainParams):
    vision: str | None = param(
        None,
        help="CLIP model (a `refinery clip train` directory or an open_clip spec) whose image "
        "tower the stage uses; default: the lake's models/clip. On --resume: the run's own.",
    )


class TrainSummary(Summary):
    stage: str
    run_id: str
    run_dir: str
    checkpoint: str
    init: str
    mixture: str
    steps: int
    seq_len: int
    final_loss: float
    eval_loss_mean: float | None
    eval_loss_mean_at_start: float | None
    # weighted by the mixture's training-token shares per bucket/group (what the check judges)
    eval_loss_mixture: float | None = None
    eval_loss_mixture_at_start: float | None = None
    eval_losses: dict[str, float]
    eval_losses_at_start: dict[str, float]
    tokens_per_s: float | None
    loss_curve: str
    loss_curve_path: str
    late_query_loss: dict[str, float] | None = None
    # multimodal: caption loss on held-out pairs given the matched vs a deranged image
    image_gap_first: float | None = None
    image_gap_last: float | None = None
    caption_loss_matched: float | None = None
    caption_loss_mismatched: float | None = None
    text_loss_init: float | None = None
    text_loss_final: float | None = None
    text_loss_tolerance: float | None = None
    markdown_fields: ClassVar[tuple[str, ...]] = ("loss_curve",)

    def text(self) -> str:
        lines = [
            f"{self.stage}: {self.steps} steps, seq_len {self.seq_len}, "
            f"final loss {self.final_loss:.4f}"
        ]
        before, after = self.eval_loss_mean_at_start, self.eval_loss_mean
        if before is not None and after is not None:
            lines.append(f"  held-out loss {before:.4f} -> {after:.4f} (start -> end)")
            wb, wa = self.eval_loss_mixture_at_start, self.eval_loss_mixture
            if wb is not None and wa is not None:
                lines.append(f"  held-out loss, mixture-weighted {wb:.4f} -> {wa:.4f}")
            for key, loss in self.eval_losses.items():
                start = self.eval_losses_at_start.get(key, float("nan"))
                lines.append(f"    {key}: {start:.4f} -> {loss:.4f}")
        if self.late_query_loss:
            figures = ", ".join(f"{k} {v:.3f}" for k, v in self.late_query_loss.items())
            lines.append(f"  late-query loss: {figures}")
        if self.caption_loss_matched is not None and self.caption_loss_mismatched is not None:
            lines.append(
                f"  caption loss, held-out pairs: matched image {self.caption_loss_matched:.4f}, "
                f"mismatched {self.caption_loss_mismatched:.4f}; gap {self.image_gap_first:+.4f} "
                f"-> {self.image_gap_last:+.4f} (start -> end)"
            )
        if self.text_loss_init is not None and self.text_loss_final is not None:
            lines.append(
                f"  text loss {self.text_loss_init:.4f} (init) -> {self.text_loss_final:.4f}, "
                f"tolerance +{self.text_loss_tolerance:.0%}"
            )
        lines.append(f"  checkpoint: {self.checkpoint}")
        lines.append(f"  loss curve: {self.loss_curve_path}")
        return "\n".join(lines)


def _progress(stage: str, lake_: Lake):
    """A rich progress bar on a terminal, step logs elsewhere."""
    import contextlib

    if not lake_.interactive:

        def log(step: int, total: int, row: dict | None) -> None:
            if row is not None:
                lake_.log(f"{stage} step {step}/{total} loss {row['loss']:.4f}")

        return contextlib.nullcontext(log)
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    @contextlib.contextmanager
    def bar():
        columns = (
            TextColumn(f"[bold]{stage}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=Console(stderr=True)) as progress:
            task = progress.add_task(stage, total=None, info="starting")

            def on_step(step: int, total: int, row: dict | None) -> None:
                info = {}
                if row is not None:
                    tps = f"{row['tokens_per_s']:,.0f} tok/s" if row["tokens_per_s"] else ""
                    info = {"info": f"loss {row['loss']:.4f} lr {row['lr']:.2e} {tps}"}
                progress.update(task, completed=step, total=total, **info)

            yield on_step

    return bar()


def _late_query_loss(p: TrainParams, init: Path | None, out: Path, data: Path, lake_: Lake):
    """Late-query loss of this run and its init on held-out retrieval documents made with the
    options of the lake's retrieval documents (their manifest's config), on a held-out seed."""
    if not p.retrieval_eval_docs or init is None:
        return None
    made = lake_.root / lake.DATASETS["retrieval_documents"]
    cfg = lake.read_manifest(made).get("generator") if made.exists() else None
    if not cfg:
        raise FileNotFoundError(
            f"{made}: no retrieval documents with a manifest; --retrieval-eval-docs evaluates on "
            "documents made like them (run `refinery train retrieval-data` first)"
        )
    from training.longctx import compare_checkpoints, make_retrieval_docs

    options = {k: cfg[k] for k in ("n_facts", "n_queries", "values") if k in cfg}
    if "filler_sentences" in cfg:
        options["filler_sentences"] = tuple(cfg["filler_sentences"])
    docs = make_retrieval_docs(p.retrieval_eval_docs, int(cfg.get("seed", 0)) + 10_000, **options)
    runs = {"init": init, "run": out}
    result = compare_checkpoints(runs, data / "tokenizer.json", docs)
    return {k: round(v["loss"], 4) for k, v in result.items()}


def train(stage: str):
    def run(p: TrainParams, lake_: Lake) -> TrainSummary:
        vision = getattr(p, "vision", None)
        import base64

        from training import distributed
        from training.checkpoint import latest_checkpoint

        ctx = distributed.init()  # under torchrun: rank 0 picks the run directory for all
        runs = lake_.dir("runs") / stage
        data = Path(p.data) if p.data else stage_mixture_dir(stage, p.config, lake_.root)
        if p.out is not None:
            out, resume, versioned = Path(p.out), p.resume, False
        else:
            previous = None
            if ctx.is_main and (p.resume or distributed.restarted()):
                previous = resumable_run(runs)
                if not p.resume and not (previous and distributed.continues_launch(previous)):
                    previous = None  # torchrun restarted us: continue only this launch's run
            out = (previous or new_run_dir(runs)) if ctx.is_main else None
            resume, versioned = previous is not None, True
            out, resume = distributed.broadcast_from_main((out, resume), ctx)
        init = Path(p.init) if p.init else None
        if init is None and versioned and not resume and stage in UPSTREAM:
            init = latest_run(lake_.dir("runs") / UPSTREAM[stage])
            if init is None or latest_checkpoint(init) is None:
                raise FileNotFoundError(
                    f"{lake_.dir('runs') / UPSTREAM[stage]}: no finished run with a checkpoint; "
                    f"train {UPSTREAM[stage]} first (or pass --init)"
                )
        if stage == "multimodal" and vision is None and not resume:
            vision = lake_.root / lake.DATASETS["clip_model"]
            if not vision.is_dir():
                raise FileNotFoundError(
                    f"{vision}: no CLIP model; train one (`refinery clip train`) or pass --vision"
                )
        lake_.log(f"{stage}: run directory {out}" + (" (resumed)" if resume else ""))
        with _progress(stage, lake_) if ctx.is_main else contextlib.nullcontext() as on_step:
            s = run_train(
                stage,
                p.config,
                data,
                out,
                init=init,
                steps=p.steps,
                resume=resume,
                on_step=on_step,
                vision=vision,
            )
        if versioned and ctx.is_main:
            set_latest(runs, out)
        png = base64.b64encode(Path(s["loss_plot"]).read_bytes()).decode()
        return TrainSummary(
            outputs={TRAIN_ASSETS[stage][0]: str(out)},
            stage=stage,
            run_id=out.name,
            run_dir=str(out),
            checkpoint=str(s["checkpoint"]),
            init=str(s["init"]) if s["init"] else "none",
            mixture=str(data),
            steps=s["steps"],
            seq_len=s["seq_len"],
            final_loss=s["final_loss"],
            eval_loss_mean=s["eval_mean"],
            eval_loss_mean_at_start=s["eval_mean_before"],
            eval_loss_mixture=s.get("eval_mixture"),
            eval_loss_mixture_at_start=s.get("eval_mixture_before"),
            eval_losses=s["eval"],
            eval_losses_at_start=s["eval_before"],
            tokens_per_s=s["tokens_per_s"],
            loss_curve=f"![loss curve](data:image/png;base64,{png})",
            loss_curve_path=s["loss_plot"],
            image_gap_first=s.get("gap_first"),
            image_gap_last=s.get("gap_last"),
            caption_loss_matched=s.get("caption_loss_matched"),
            caption_loss_mismatched=s.get("caption_loss_mismatched"),
            text_loss_init=s.get("text_loss_init"),
            text_loss_final=s.get("text_loss_final"),
            text_loss_tolerance=s.get("text_loss_tolerance"),
            late_query_loss=_late_query_loss(p, init, out, data, lake_) if ctx.is_main else None,
        )

    run.__doc__ = STAGE_HELP[stage]
    return run


def _loss_check(asset: str) -> Check:
    def fn(summary: Summary, lake_: Lake):
        from training import checks

        return checks.training_loss_finite_and_falling(Path(summary.outputs[asset]))

    return Check("loss_finite_and_falling", asset, fn, "Training loss finite and falling.")


def _image_checks(asset: str) -> tuple[Check, ...]:
    """The multimodal stage's evidence: the image helps the caption more at the end than at the
    start, and text loss stays within the config's tolerance of the init checkpoint's."""

    def gap(summary: Summary, lake_: Lake):
        from common.checks import CheckOutcome

        first, last = summary.image_gap_first, summary.image_gap_last
        ok = first is not None and last is not None and last > 0 and last > first
        return CheckOutcome(
            ok,
            f"caption loss gap (mismatched - matched image) {first} -> {last}",
            {k: v for k, v in {"gap_first": first, "gap_last": last}.items() if v is not None},
        )

    def text(summary: Summary, lake_: Lake):
        from common.checks import CheckOutcome

        init, final, tol = (
            summary.text_loss_init,
            summary.text_loss_final,
            summary.text_loss_tolerance,
        )
        ok = init is not None and final is not None and final <= init * (1 + tol)
        return CheckOutcome(
            ok,
            f"text eval loss {init} (init) -> {final}, allowed up to +{(tol or 0):.0%}",
            {
                k: v
                for k, v in {
                    "text_loss_init": init,
                    "text_loss_final": final,
                    "tolerance": tol,
                }.items()
                if v is not None
            },
        )

    return (
        Check("image_gap_grows", asset, gap, "Matched-image caption loss gap grows.", False),
        Check("text_loss_within_tolerance", asset, text, "Text loss does not regress.", False),
    )


RETRIEVAL_DATA = Stage(
    name="train retrieval-data",
    params=RetrievalDataParams,
    run=retrieval_data,
    description=retrieval_data.__doc__,
    outputs=("retrieval_documents",),
    group="train",
    # Dagster's defaults fit the tiny config's 512-token sequences.
    asset_defaults={
        "docs": 1000,
        "facts": 3,
        "queries": 3,
        "filler_min": 12,
        "filler_max": 18,
        "values": "words",
    },
    output_descriptions={
        "retrieval_documents": "Synthetic long documents (facts early, queries late): lake "
        "synth/long/retrieval.parquet, a source of the long-context mixtures."
    },
)
RETRIEVAL_EVAL = Stage(
    "train retrieval-eval", RetrievalEvalParams, retrieval_eval, retrieval_eval.__doc__
)


def _train_stage(stage: str) -> Stage:
    asset, mixture, upstream = TRAIN_ASSETS[stage]
    return Stage(
        name=f"train {stage}",
        params=MultimodalTrainParams if stage == "multimodal" else TrainParams,
        run=train(stage),
        description=STAGE_HELP[stage],
        outputs=(asset,),
        inputs=(
            mixture,
            *([upstream] if upstream else []),
            *(["clip_model"] if stage == "multimodal" else []),
        ),
        group="train",
        asset_defaults={"config": "tiny"},
        bind={
            "data": mixture,
            **({"init": upstream} if upstream else {}),
            **({"vision": "clip_model"} if stage == "multimodal" else {}),
        },
        checks=(_loss_check(asset), *(_image_checks(asset) if stage == "multimodal" else ())),
        output_descriptions={
            asset: f"{STAGE_HELP[stage]} A new versioned run under lake runs/{stage}/ each "
            "time (runs/<stage>/latest.json names the newest); resume: true continues the newest."
        },
    )


TRAIN = [_train_stage(stage) for stage in STAGES]
