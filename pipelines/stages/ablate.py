"""`refinery ablate [SPEC.yaml]` and the asset `ablation_report`: proxy-model ablations
(training/ablate/). Without a spec, the lake's own ablation: filtered vs unfiltered documents
(training/ablate/lake.py), which is what the asset runs on the lake's datasets."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, ClassVar

from common import lake
from pipelines.stage import Lake, Params, Stage, Summary, param

REPORTS_SUBDIR = "ablation"


class AblateParams(Params):
    spec: Path | None = param(
        None,
        argument=True,
        asset=False,
        help="Ablation spec YAML (arms, proxy config, token budget, seeds, eval sets; see "
        "docs/ablate.md). Default: the lake's own ablation, filtered vs unfiltered documents.",
    )
    out: Path | None = param(
        None,
        output=True,
        help="Output directory (results.json, report.md, plots, arms/); an ablation there is "
        "resumed. Default: lake reports/ablation/<spec name>.",
    )
    annotated: Path | None = param(
        None,
        input="filtered_documents",
        help="Lake ablation: every annotated row (the unfiltered arm); default: the lake's.",
    )
    documents: Path | None = param(
        None,
        input="deduplicated_documents",
        help="Lake ablation: the filter's kept documents (the filtered arm and the eval split).",
    )
    tokenizer: Path | None = param(
        None, input="tokenizer", help="Lake ablation: the tokenizer both arms use."
    )
    tokens: int = param(
        32_768, min=1, help="Lake ablation: training tokens per run (equal across arms)."
    )
    seeds: list[int] = param([0, 1, 2], help="Lake ablation: seeds (3+: intervals).")
    config: str = param("proxy", help="Lake ablation: the proxy model's training config.")


class AblateSummary(Summary):
    name: str
    out_dir: str
    arms: list[str]
    reused_arms: list[str]
    tokens: int
    seeds: list[int]
    interval: str
    table: dict[str, dict[str, str]]  # metric -> arm or "a - b" -> "mean ± half"
    results_json: str
    report_md: str
    report: str  # report.md's text, plots inline
    loss_curves_path: str
    bpb_path: str
    results: dict[str, Any]
    markdown_fields: ClassVar[tuple[str, ...]] = ("report",)

    def metadata(self) -> dict[str, Any]:
        return self.model_dump(exclude={"outputs", "results"})

    def text(self) -> str:
        return f"ablation {self.name}: {self.report_md}"


def _inline(report: str, out_dir: Path) -> str:
    """report.md with its plots as data URIs (Dagster shows the Markdown without the files)."""
    for name in ("loss_curves.png", "bpb.png"):
        png = base64.b64encode((out_dir / name).read_bytes()).decode()
        report = report.replace(f"]({name})", f"](data:image/png;base64,{png})")
    return report


def _filter_docs(lake_: Lake):
    """The filter stage for arms with a `filter:` config, in process."""

    def run(name: str, docs: Path, config: Path, out: Path) -> Path:
        from pipelines.stages.filter import IN_PROCESS, run_filter

        docs_dir = docs.parent if docs.suffix == ".parquet" else docs
        lake_.log(f"ablate: arm {name}: filtering {docs_dir} with {config}")
        run_filter(docs_dir, out, config=config, beam_args=[f"--runner={IN_PROCESS}"])
        return out

    return run


def ablate(p: AblateParams, lake_: Lake) -> AblateSummary:
    """Proxy-model ablation: the same small model, budget and seeds on each arm's data, scored on
    held-out texts (bits per byte per language, zero-shot multiple choice) with intervals."""
    from training.ablate.report import cell, diff_cell
    from training.ablate.run import run_ablation
    from training.ablate.spec import load_spec

    inputs: list[str] = []
    if p.spec is not None:
        spec_path = Path(p.spec)
        out = (
            Path(p.out)
            if p.out
            else lake_.dir("reports") / REPORTS_SUBDIR / load_spec(spec_path).name
        )
        inputs.append(str(spec_path))
    else:
        from training.ablate.lake import lake_ablation_spec

        paths = {
            "annotated": p.annotated or lake_.root / lake.DATASETS["filtered_documents"],
            "documents": p.documents or lake_.root / lake.DATASETS["deduplicated_documents"],
            "tokenizer": p.tokenizer or lake_.root / lake.DATASETS["tokenizer"],
        }
        out = Path(p.out) if p.out else lake_.dir("reports") / REPORTS_SUBDIR / "lake-filter"
        spec_path = lake_ablation_spec(
            lake_.root, out, tokens=p.tokens, seeds=p.seeds, config=p.config, **paths
        )
        inputs += [str(v) for v in paths.values()]
    r = run_ablation(
        spec_path, out, lake_root=lake_.root, filter_docs=_filter_docs(lake_), log=lake_.log
    )
    lake.write_manifest(
        out,
        rows=len(r["arms"]),
        inputs=inputs + [a["mixture"] for a in r["arms"].values()],
        config={"spec": str(spec_path), "tokens": r["tokens"], "seeds": r["seeds"]},
        extra={"kind": "ablation", "results": str(out / "results.json")},
    )
    table = {
        m: {n: cell(a["summary"][m]) for n, a in r["arms"].items()}
        | {pair: diff_cell(m, d[m]) for pair, d in r["differences"].items()}
        for m in r["metrics"]
    }
    return AblateSummary(
        outputs={"ablation_report": str(out)},
        name=r["name"],
        out_dir=str(out),
        arms=list(r["arms"]),
        reused_arms=r["reused_arms"],
        tokens=r["tokens"],
        seeds=r["seeds"],
        interval=r["interval"],
        table=table,
        results_json=str(out / "results.json"),
        report_md=r["report"],
        report=_inline(Path(r["report"]).read_text(encoding="utf-8"), out),
        loss_curves_path=r["plots"]["loss_curves"],
        bpb_path=r["plots"]["bpb"],
        results=r,
    )


def show(summary: AblateSummary) -> None:
    """The Rich table, then where the report is."""
    from rich.console import Console

    from training.ablate.report import rich_table

    console = Console()
    console.print(rich_table(summary.results))
    if summary.reused_arms:
        console.print(f"reused complete arms: {', '.join(summary.reused_arms)}")
    console.print(f"report: {summary.report_md}\nresults: {summary.results_json}")


ABLATE = Stage(
    name="ablate",
    params=AblateParams,
    run=ablate,
    description=ablate.__doc__,
    outputs=("ablation_report",),
    inputs=("filtered_documents", "deduplicated_documents", "tokenizer"),
    group="train",
    show=show,
    # the demo's size: 2 arms x 3 seeds x 8 steps of the proxy, ~27 s CPU on the sample web
    asset_defaults={"tokens": 8_192},
    output_descriptions={
        "ablation_report": "The lake's own proxy-model ablation (filtered vs unfiltered "
        "documents, the same tokenizer, budget and seeds): results.json, report.md, loss "
        "curves and bits-per-byte bars with intervals, under lake reports/ablation/lake-filter."
    },
)
