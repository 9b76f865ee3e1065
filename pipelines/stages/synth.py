"""Synthetic data stages: `refinery synth charts` (programmatic or teacher-written charts, run in
the bubblewrap sandbox, QA verified against the data) and `refinery synth tables` (extracted
tables as Markdown, a browser-rendered image and verified QA); assets `synthetic_charts` and
`table_pairs`. Without a teacher both are programmatic, and say so."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from pipelines import lake as lake_mod
from pipelines.stage import Lake, Params, Stage, Summary, param


class TeacherOptions(Params):
    """The OpenAI-compatible teacher every synth command takes (none: programmatic)."""

    teacher_url: str = param(
        "",
        envvar="REFINERY_TEACHER_URL",
        resource="teacher.base_url",
        help="OpenAI-compatible base URL of the teacher (default: none, programmatic).",
    )
    teacher_model: str = param("", envvar="REFINERY_TEACHER_MODEL", resource="teacher.model")

    def teacher(self, cache_dir: Path):
        """A TeacherClient (key from REFINERY_TEACHER_API_KEY, answers cached on disk), or None."""
        if not self.teacher_url:
            return None
        if not self.teacher_model:
            raise ValueError("--teacher-url needs --teacher-model")
        from synth.teacher import TeacherClient

        return TeacherClient(self.teacher_url, self.teacher_model, cache_dir=cache_dir)


def _fresh(out: Path, name: str) -> None:
    """The old file and images go first (a given --out is never cleared: it errors instead)."""
    (out / name).unlink(missing_ok=True)
    shutil.rmtree(out / "images", ignore_errors=True)


class ChartsParams(TeacherOptions):
    out: Path | None = param(
        None,
        output=True,
        help="Output directory (charts.parquet, images/); default: lake synth/charts.",
    )
    n: int = param(24, min=0, help="Number of charts.")
    seed: int = param(0, help="Seed of topics, data and code.")
    types: str = param("", help="Comma-separated chart types (default: all).")


class ChartsSummary(Summary):
    charts: int
    rendered: int
    status: dict[str, int]
    qa: int
    verified_qa_share: float
    dropped_qa_reasons: dict[str, int] = {}
    charts_per_s: float
    teacher: str


def charts(p: ChartsParams, lake: Lake) -> ChartsSummary:
    """Make charts: topic -> data -> plotting code -> sandboxed run -> PNG -> verified QA."""
    from synth.charts import make_charts

    out = Path(p.out) if p.out else lake.root / "synth" / "charts"
    out.mkdir(parents=True, exist_ok=True)
    if p.out is None:
        _fresh(out, "charts.parquet")  # the lake's dataset is rewritten by a new run
    types = [t.strip() for t in p.types.split(",") if t.strip()] or None
    s = make_charts(out, n=p.n, seed=p.seed, types=types, teacher=p.teacher(out / "_teacher"))
    lake_mod.write_manifest(
        out / "charts.parquet", rows=s["charts"], config=p.model_dump(mode="json")
    )
    figures = {k: s[k] for k in ChartsSummary.model_fields if k in s and k != "outputs"}
    figures["teacher"] = str(s.get("teacher") or "programmatic")
    return ChartsSummary(outputs={"synthetic_charts": str(out / "charts.parquet")}, **figures)


class TablesParams(TeacherOptions):
    tables: Path | None = param(
        None, input="documents", help="An `extract` output directory (tables.parquet)."
    )
    out: Path | None = param(
        None,
        output=True,
        help="Output directory (table_pairs.parquet, images/); default: lake synth/tables.",
    )


class TablesSummary(Summary):
    tables: int
    ok: int
    rendered: int
    status: dict[str, int]
    qa: int
    verified_share: float
    teacher_sent: int
    teacher_skipped_opted_out: int
    blocked_requests: int


def tables(p: TablesParams, lake: Lake) -> TablesSummary:
    """Tables to Markdown, a browser-rendered image and QA verified against the cells."""
    from synth.tables import make_table_pairs

    source = Path(p.tables) if p.tables else lake.root / "extract"
    out = Path(p.out) if p.out else lake.root / "synth" / "tables"
    out.mkdir(parents=True, exist_ok=True)
    if p.out is None:
        _fresh(out, "table_pairs.parquet")  # the lake's dataset is rewritten by a new run
    s = make_table_pairs(source, out, teacher=p.teacher(out / "_teacher")).as_dict()
    lake_mod.write_manifest(
        out / "table_pairs.parquet", rows=s["tables"], inputs=[str(source / "tables.parquet")]
    )
    figures: dict[str, Any] = {k: s[k] for k in TablesSummary.model_fields if k in s}
    return TablesSummary(outputs={"table_pairs": str(out / "table_pairs.parquet")}, **figures)


CHARTS = Stage(
    name="synth charts",
    params=ChartsParams,
    run=charts,
    description=charts.__doc__,
    outputs=("synthetic_charts",),
    group="synth",
    output_descriptions={
        "synthetic_charts": "Charts rendered in the sandbox with QA verified against their data "
        "(lake synth/charts/charts.parquet)."
    },
)
TABLES = Stage(
    name="synth tables",
    params=TablesParams,
    run=tables,
    description=tables.__doc__,
    outputs=("table_pairs",),
    inputs=("documents",),
    group="synth",
    output_descriptions={
        "table_pairs": "Extracted tables as Markdown, a rendered image and verified QA, with "
        "training_allowed carried (lake synth/tables/table_pairs.parquet)."
    },
)
