"""Synthetic data stages: `refinery synth charts` (programmatic or teacher-written charts, run in
the bubblewrap sandbox, QA verified against the data), `refinery synth tables` (extracted tables
as Markdown, a browser-rendered image and verified QA) and `refinery synth domain-qa` (a vision
teacher's QA on knowledge-domain images, with adversarial questions whose refusals are kept);
assets `synthetic_charts`, `table_pairs` and `domain_qa`. Without a teacher charts and tables are
programmatic, and domain QA is rows with status `no_teacher`: each says so. Every summary carries
the teacher's requests, tokens and cost (0 without a teacher or without prices)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from common import lake as lake_mod
from pipelines.stage import Check, Lake, Params, Stage, Summary, param


class TeacherOptions(Params):
    """The OpenAI-compatible teacher every synth command takes (none: programmatic)."""

    teacher_url: str = param(
        "",
        envvar="REFINERY_TEACHER_URL",
        resource="teacher.base_url",
        help="OpenAI-compatible base URL of the teacher (default: none: charts and tables are "
        "programmatic, domain QA rows say no_teacher).",
    )
    teacher_model: str = param(
        "",
        envvar="REFINERY_TEACHER_MODEL",
        resource="teacher.model",
        help="Model name the teacher serves (with --teacher-url).",
    )
    teacher_price_prompt: float | None = param(
        None,
        min=0,
        envvar="REFINERY_TEACHER_PRICE_PROMPT",
        help="Price per 1k prompt tokens of --teacher-model (default: unknown, cost shown as 0).",
    )
    teacher_price_completion: float | None = param(
        None,
        min=0,
        envvar="REFINERY_TEACHER_PRICE_COMPLETION",
        help="Price per 1k completion tokens of --teacher-model (give both prices or neither).",
    )
    teacher_rps: float | None = param(
        None,
        envvar="REFINERY_TEACHER_RPS",
        help="Most requests per second sent to the teacher (default: no limit).",
    )

    def teacher(self, cache_dir: Path, consent=None):
        """A TeacherClient (key from REFINERY_TEACHER_API_KEY, answers cached on disk, refusing
        what `consent`, the one consent rule with the lake's ledger, refuses), or None."""
        if not self.teacher_url:
            return None
        if not self.teacher_model:
            raise ValueError("--teacher-url needs --teacher-model")
        if (self.teacher_price_prompt is None) != (self.teacher_price_completion is None):
            raise ValueError(
                "--teacher-price-prompt and --teacher-price-completion: give both or neither"
            )
        if self.teacher_rps is not None and not self.teacher_rps > 0:
            raise ValueError(f"--teacher-rps {self.teacher_rps} must be > 0 requests per second")
        from common.teacher import TeacherClient

        return TeacherClient(
            self.teacher_url,
            self.teacher_model,
            cache_dir=cache_dir,
            requests_per_s=self.teacher_rps,
            price_per_1k_prompt_tokens=self.teacher_price_prompt,
            price_per_1k_completion_tokens=self.teacher_price_completion,
            consent=consent,
        )


def input_consent(lake: Lake, *inputs: Path | None):
    """The one consent rule (common.consent) for a run over `inputs`: the rows' flags, then the
    consent ledger of the run's lake and of each input's own lake."""
    from common.consent import Consent, ledger_files_for

    return Consent.load(None, files=ledger_files_for(lake.root, *inputs))


class TeacherFigures(Summary):
    """The teacher's accounting, in every synth summary: 0 (and no usage) without a teacher."""

    teacher_requests: int = 0
    teacher_cache_hits: int = 0
    teacher_tokens: int = 0
    teacher_cost: float = 0.0
    teacher_usage: dict[str, Any] | None = None

    def metadata(self) -> dict[str, Any]:
        """The stage's own figures first, the teacher's after them."""
        m = super().metadata()
        own = {k: v for k, v in m.items() if not k.startswith("teacher_")}
        return {**own, **{k: v for k, v in m.items() if k.startswith("teacher_")}}


def teacher_figures(client) -> dict[str, Any]:
    """TeacherFigures's fields for a TeacherClient (or None: no teacher)."""
    if client is None:
        return {}
    u = client.usage()
    return {
        "teacher_requests": u["requests"],
        "teacher_cache_hits": u["cache_hits"],
        "teacher_tokens": u["total_tokens"],
        "teacher_cost": float(u["cost"] or 0.0),
        "teacher_usage": u,
    }


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


class ChartsSummary(TeacherFigures):
    charts: int
    rendered: int
    status: dict[str, int]
    qa: int
    verified_qa_share: float
    dropped_qa_reasons: dict[str, int] = {}
    rejects: dict[str, int] = {}  # charts not ok, by reason (e.g. missing_glyphs)
    charts_per_s: float
    teacher: str


def charts(p: ChartsParams, lake: Lake) -> ChartsSummary:
    """Make charts: topic -> data -> plotting code -> sandboxed run -> PNG -> verified QA."""
    from synth.charts import make_charts

    out = Path(p.out) if p.out else lake.root / "synth" / "charts"
    out.mkdir(parents=True, exist_ok=True)
    client = p.teacher(out / "_teacher")
    if p.out is None:
        _fresh(out, "charts.parquet")  # the lake's dataset is rewritten by a new run
    types = [t.strip() for t in p.types.split(",") if t.strip()] or None
    s = make_charts(out, n=p.n, seed=p.seed, types=types, teacher=client)
    lake_mod.write_manifest(
        out / "charts.parquet", rows=s["charts"], config=p.model_dump(mode="json")
    )
    figures = {k: s[k] for k in ChartsSummary.model_fields if k in s and k != "outputs"}
    figures["teacher"] = str(s.get("teacher") or "programmatic")
    figures.update(teacher_figures(client))
    return ChartsSummary(outputs={"synthetic_charts": str(out / "charts.parquet")}, **figures)


class TablesParams(TeacherOptions):
    tables: Path | None = param(
        None, input="documents", help="An `extract` output directory (tables.parquet)."
    )
    out: Path | None = param(
        None,
        output=True,
        help="Output directory (table_pairs.parquet, table_qa_rejects.parquet, images/); default: lake synth/tables.",
    )


class TablesSummary(TeacherFigures):
    tables: int
    ok: int
    rendered: int
    status: dict[str, int]
    qa: int
    verified_share: float
    teacher_sent: int
    teacher_skipped_opted_out: int
    teacher_rejects: dict[str, int] = {}  # teacher items dropped, by reason (table_qa_rejects)
    blocked_requests: int


def tables(p: TablesParams, lake: Lake) -> TablesSummary:
    """Tables to Markdown, a browser-rendered image and QA verified against the cells."""
    from synth.tables import make_table_pairs

    source = Path(p.tables) if p.tables else lake.root / "extract"
    out = Path(p.out) if p.out else lake.root / "synth" / "tables"
    out.mkdir(parents=True, exist_ok=True)
    consent = input_consent(lake, source)
    client = p.teacher(out / "_teacher", consent)
    if p.out is None:
        _fresh(out, "table_pairs.parquet")  # the lake's dataset is rewritten by a new run
        (out / "table_qa_rejects.parquet").unlink(missing_ok=True)
    s = make_table_pairs(source, out, teacher=client, consent=consent).as_dict()
    lake_mod.write_manifest(
        out / "table_pairs.parquet",
        rows=s["tables"],
        inputs=[str(source / "tables.parquet")],
        extra={"rejects": "table_qa_rejects.parquet", "teacher_rejects": s["teacher_rejects"]},
    )
    lake_mod.write_manifest(
        out / "table_qa_rejects.parquet",
        rows=sum(s["teacher_rejects"].values()),
        inputs=[str(out / "table_pairs.parquet")],
        extra={"kind": "table-qa-rejects"},
    )
    figures: dict[str, Any] = {k: s[k] for k in TablesSummary.model_fields if k in s}
    figures.update(teacher_figures(client))
    return TablesSummary(outputs={"table_pairs": str(out / "table_pairs.parquet")}, **figures)


class DomainQAParams(TeacherOptions):
    domains: Path | None = param(
        None,
        input="domain_images",
        help="An `images domains` output (domain_images.parquet); default: lake images/domain.",
    )
    pairs: Path | None = param(
        None,
        input="image_pairs",
        help="The `images build` output the domains came from; default: lake images/pairs.",
    )
    out: Path | None = param(
        None,
        output=True,
        help="Output directory (domain_qa.parquet, domain_qa_rejects.parquet, images/); "
        "default: lake synth/domain_qa.",
    )
    questions: int = param(4, min=1, help="Answerable question-answer pairs asked per image.")
    adversarial: int = param(
        2, min=0, help="Teacher-written questions the image cannot answer, per image."
    )
    templates: int = param(
        1, min=0, help="Fixed unanswerable questions (who/when/where made) asked per image."
    )
    seed: int = param(0, help="Seed of the template questions' choice.")
    workers: int = param(4, min=1, help="Images asked at once.")


class DomainQASummary(TeacherFigures):
    images_in: int
    rows: int
    status: dict[str, int]
    sent: int
    not_sent_consent: int
    qa: int
    qa_by_kind: dict[str, int] = {}
    refusals: int
    refusal_rate: float | None = None
    verified_share: float
    dropped_qa_reasons: dict[str, int] = {}
    teacher: str
    note: str | None = None


def domain_qa(p: DomainQAParams, lake: Lake) -> DomainQASummary:
    """A vision teacher's QA on the selected knowledge-domain images, the domain in the prompt,
    with adversarial questions the image cannot answer: refusals kept, answers dropped."""
    from synth.domain_qa import OUTPUT_NAME, REJECTS_NAME, make_domain_qa

    domains = Path(p.domains) if p.domains else lake.root / "images" / "domain"
    pairs = Path(p.pairs) if p.pairs else lake.root / "images" / "pairs"
    out = Path(p.out) if p.out else lake.root / "synth" / "domain_qa"
    out.mkdir(parents=True, exist_ok=True)
    consent = input_consent(lake, domains, pairs)
    client = p.teacher(out / "_teacher", consent)
    if p.out is None:
        _fresh(out, OUTPUT_NAME)  # the lake's dataset is rewritten by a new run (cache kept)
        (out / REJECTS_NAME).unlink(missing_ok=True)
    s = make_domain_qa(
        domains,
        [pairs],
        out,
        client,
        questions=p.questions,
        adversarial=p.adversarial,
        templates=p.templates,
        seed=p.seed,
        workers=p.workers,
        consent=consent,
    )
    lake_mod.write_manifest(
        out / OUTPUT_NAME,
        rows=s["rows"],
        inputs=[s["source"], str(pairs)],
        config=p.model_dump(mode="json"),
        extra={"rejects": REJECTS_NAME, "dropped_qa_reasons": s["dropped_qa_reasons"]},
    )
    lake_mod.write_manifest(
        out / REJECTS_NAME,
        rows=sum(s["dropped_qa_reasons"].values()),
        inputs=[str(out / OUTPUT_NAME)],
        extra={"kind": "domain-qa-rejects"},
    )
    figures = {k: s[k] for k in DomainQASummary.model_fields if k in s and k != "outputs"}
    figures["teacher"] = s["teacher"] or "none"
    figures.update(teacher_figures(client))
    return DomainQASummary(outputs={"domain_qa": str(out / OUTPUT_NAME)}, **figures)


def _domain_qa_consent(summary: DomainQASummary, lake: Lake):
    """No row whose image may not be used has QA or a teacher: it was never sent."""
    import pyarrow.parquet as pq

    from common.checks import CheckOutcome

    rows = pq.read_table(summary.outputs["domain_qa"]).to_pylist()
    sent = [r["id"] for r in rows if not r["training_allowed"] and (r["qa"] or r["teacher"])]
    return CheckOutcome(
        not sent,
        f"{len(sent)} opted-out rows with QA or a teacher"
        + (f" (first: {sent[0]})" if sent else ""),
        {
            "opted_out_sent": len(sent),
            "opted_out_rows": sum(not r["training_allowed"] for r in rows),
        },
    )


def _domain_qa_accounted(summary: DomainQASummary, lake: Lake):
    """One row per selected (image, domain) of the domain_images it read: none lost."""
    import pyarrow.parquet as pq

    from common.checks import CheckOutcome

    path = Path(summary.outputs["domain_qa"])
    source = lake_mod.read_manifest(path)["inputs"][0]
    want = {
        (r["id"], r["domain"])
        for r in pq.read_table(source, columns=["id", "domain", "selected"]).to_pylist()
        if r["selected"]
    }
    got = [(r["pair_id"], r["domain"]) for r in pq.read_table(path).to_pylist()]
    ok = len(got) == len(set(got)) and set(got) == want
    return CheckOutcome(
        ok,
        f"{len(want)} selected domain images in, {len(got)} domain_qa rows out",
        {"selected": len(want), "rows": len(got)},
    )


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
DOMAIN_QA = Stage(
    name="synth domain-qa",
    params=DomainQAParams,
    run=domain_qa,
    description=domain_qa.__doc__,
    outputs=("domain_qa",),
    inputs=("domain_images", "image_pairs"),
    group="synth",
    checks=(
        Check(
            "no_opted_out_sent",
            "domain_qa",
            _domain_qa_consent,
            "No image whose training_allowed is not true has QA or a teacher: none was sent.",
        ),
        Check(
            "images_accounted",
            "domain_qa",
            _domain_qa_accounted,
            "One row per selected domain image (rows in = rows out), each with its status.",
        ),
    ),
    output_descriptions={
        "domain_qa": "A vision teacher's QA on the selected knowledge-domain images, refusals to "
        "unanswerable questions kept (answerable=false); without a teacher every image is a row "
        "with status no_teacher (lake synth/domain_qa/domain_qa.parquet)."
    },
)
