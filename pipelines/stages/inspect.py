"""`refinery inspect DIR`: seeded samples of a filter output's kept and dropped rows with their
scores and reasons, in the terminal and optionally as one HTML page (`filters.inspect`)."""

from __future__ import annotations

from pathlib import Path

from pipelines.stage import Lake, Params, Stage, Summary, param


class InspectParams(Params):
    dir: Path = param(argument=True, help="A filter output directory (holds annotated.parquet).")
    reason: str | None = param(
        None, help="Only this outcome: a drop reason (e.g. too_short) or `kept`."
    )
    lang: str | None = param(None, help="Only rows of this language (the `lang` column).")
    n: int = param(20, flag="--n", min=1, help="Rows shown per outcome.")
    seed: int = param(0, help="Seed of the sample: the same seed shows the same rows.")
    html: Path | None = param(
        None,
        help="Also write one self-contained HTML page here: the funnel plot, the per-step "
        "statistics and the samples per outcome.",
    )


class InspectSummary(Summary):
    dir: str
    counts: dict[str, int]
    terminal: str
    html: str | None = None

    def metadata(self) -> dict:
        return {"counts": self.counts, **({"html": self.html} if self.html else {})}

    def text(self) -> str:
        page = f"\npage: {self.html}" if self.html else ""
        return self.terminal + page


def inspect_stage(p: InspectParams, lake: Lake) -> InspectSummary:
    """Show seeded samples of a filter output's kept and dropped rows (scores, reasons, text)."""
    from filters import inspect

    samples = inspect.sample(p.dir, reason=p.reason, lang=p.lang, n=p.n, seed=p.seed)
    counts = inspect.outcome_counts(p.dir, p.lang)
    page = None
    if p.html is not None:
        page = inspect.write_html(p.dir, p.html, reason=p.reason, lang=p.lang, n=p.n, seed=p.seed)
    return InspectSummary(
        dir=str(p.dir),
        counts=counts,
        terminal=inspect.render_terminal(samples, counts),
        html=str(page) if page else None,
    )


INSPECT = Stage("inspect", InspectParams, inspect_stage, inspect_stage.__doc__)
