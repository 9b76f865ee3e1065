"""See what the filter kept and dropped: seeded samples of a filter output's rows per outcome
(`kept` or a drop reason) with their scores, in the terminal (Rich) or as one HTML page with the
funnel plot and the per-step statistics (`refinery inspect DIR`; datatrove's `inspect_data`).

A sample is a pure function of (annotated.parquet, seed): each row's key is a hash of (seed,
id), and an outcome's sample is its `n` rows with the smallest keys, shown in input order. Two
passes over annotated.parquet, the first without the text column; memory is `n` rows per
outcome.

Every document field is untrusted web content: the terminal gets it as Rich `Text` (never
markup) with control characters made visible, the page gets it HTML-escaped, under a Content
Security Policy that allows no script at all.
"""

from __future__ import annotations

import base64
import hashlib
import heapq
import html
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# Annotation columns shown beside each row, when the file has them (filters/annotate.py and the
# filter's later steps add these).
SCORE_COLUMNS = (
    "lang",
    "lang_score",
    "quality_score",
    "quality_model",
    "heuristic_drop",
    "rescued",
    "pii_found",
    "toxicity_score",
    "nsfw_score",
    "safety_model",
    "duplicate_of",
    "consent_reason",
    "url_block",
    "contaminated",
    "contamination_benchmarks",
    "contamination_ngrams",
    "repeated_chars_removed",
)
KEPT = "kept"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def _key(seed: int, doc_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}\x00{doc_id}".encode(), digest_size=8).digest())


def _annotated(out_dir: str | Path) -> Path:
    path = Path(out_dir) / "annotated.parquet"
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: no annotated.parquet; DIR must be a filter output (run `refinery filter "
            "--out DIR` first)"
        )
    return path


def check_lang(path: Path, lang: str, found: set[str]) -> None:
    """`--lang` must be a code the filter writes: one of the file's, `und` or one the language
    identifier can give, so `nb` (lid.176 says `no`) is refused as `refinery filter` refuses it
    (`filters.run.check_languages`), not answered with nothing."""
    if lang in found or lang == "und":
        return
    from common.langid import LanguageIdentifier, code_fix

    labels = LanguageIdentifier().labels()
    if lang in labels:
        return
    raise ValueError(
        f"--lang {lang!r}: no row of {path} has it and it is not a language the language "
        f"identifier can give; {code_fix(lang, labels)}"
    )


def outcome_counts(out_dir: str | Path, lang: str | None = None) -> dict[str, int]:
    """Documents per outcome (`kept` or the drop reason), optionally of one language (a code
    the filter writes, `check_lang`)."""
    path = _annotated(out_dir)
    t = pq.read_table(path, columns=["lang", "drop_reason"])
    if lang is not None:
        check_lang(path, lang, set(pc.unique(t["lang"]).drop_null().to_pylist()))
        t = t.filter(pc.equal(t["lang"], lang))
    reasons = pc.fill_null(t["drop_reason"], KEPT)
    return {r["values"]: r["counts"] for r in pc.value_counts(reasons).to_pylist()}


def sample(
    out_dir: str | Path,
    *,
    reason: str | None = None,
    lang: str | None = None,
    n: int = 20,
    seed: int = 0,
) -> dict[str, list[dict]]:
    """Up to `n` rows per outcome (only `reason`'s when given; `kept` names the kept rows), of
    one language when `lang` is given; the same rows for the same seed."""
    if n < 1:
        raise ValueError(f"--n {n}: the rows per outcome must be at least 1")
    path = _annotated(out_dir)
    counts = outcome_counts(out_dir, lang)
    if reason is not None and reason not in counts:
        where = f" in language {lang!r}" if lang else ""
        raise ValueError(
            f"--reason {reason!r}: no row of {path} has this outcome{where}; its outcomes are "
            + ", ".join(sorted(counts))
        )
    heaps: dict[str, list[tuple[int, int]]] = {}
    row = 0
    with pq.ParquetFile(path) as f:
        for b in f.iter_batches(8192, columns=["id", "lang", "drop_reason"]):
            for doc_id, doc_lang, why in zip(
                b.column(0).to_pylist(), b.column(1).to_pylist(), b.column(2).to_pylist(),
                strict=True,
            ):  # fmt: skip
                outcome = why or KEPT
                if (reason is None or outcome == reason) and (lang is None or doc_lang == lang):
                    heap = heaps.setdefault(outcome, [])
                    item = (-_key(seed, str(doc_id)), row)
                    if len(heap) < n:
                        heapq.heappush(heap, item)
                    elif item > heap[0]:
                        heapq.heapreplace(heap, item)
                row += 1
    wanted = {r: o for o, heap in heaps.items() for _, r in heap}
    out: dict[str, list[dict]] = {o: [] for o in heaps}
    row = 0
    with pq.ParquetFile(path) as f:
        names = f.schema_arrow.names
        cols = ["id", "url", "title", "text", "drop_reason", *SCORE_COLUMNS]
        cols = list(dict.fromkeys(c for c in cols if c in names))
        for b in f.iter_batches(8192, columns=cols):
            picked = [i for i in range(b.num_rows) if row + i in wanted]
            if picked:
                for i, rec in zip(picked, b.take(pa.array(picked)).to_pylist(), strict=True):
                    out[wanted[row + i]].append(rec)
            row += b.num_rows
    return out


def outcome_order(counts: dict[str, int]) -> list[str]:
    """`kept` first, then the drop reasons in the filter's step order."""
    from filters.stats import step_order

    reasons = set(counts) - {KEPT}
    ordered = [r for _, rs in step_order(reasons) for r in rs]
    return ([KEPT] if KEPT in counts else []) + ordered


def visible(value: object, limit: int | None = None) -> str:
    """A field as one safe line of text: control and bidi characters shown as escapes."""
    s = "" if value is None else str(value)
    if isinstance(value, float):
        s = f"{value:.3f}"
    if limit is not None and len(s) > limit:
        s = s[:limit] + "…"
    s = s.replace("\n", " ⏎ ")
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", s)


def _score_fields(rec: dict) -> list[tuple[str, object]]:
    # Only a missing value is left out: a score of 0.0 or a false flag is evidence too.
    return [(c, rec[c]) for c in SCORE_COLUMNS if rec.get(c) is not None]


def render_terminal(
    samples: dict[str, list[dict]], counts: dict[str, int], width: int = 140, excerpt: int = 300
) -> str:
    """The samples as Rich tables, one per outcome, as text."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    total = sum(counts.values()) or 1
    console = Console(record=True, width=width, force_terminal=False)
    with console.capture() as capture:
        for outcome in outcome_order(counts):
            rows = samples.get(outcome)
            if not rows:
                continue
            title = (
                f"{outcome}: {counts[outcome]:,} documents ({counts[outcome] / total:.1%}), "
                f"{len(rows)} shown"
            )
            table = Table(title=Text(title), show_lines=True, title_justify="left")
            table.add_column("id / url", max_width=36, overflow="fold")
            table.add_column("scores", max_width=38, overflow="fold")
            table.add_column("text", overflow="fold")
            for rec in rows:
                scores = "\n".join(f"{k}={visible(v, 60)}" for k, v in _score_fields(rec))
                table.add_row(
                    Text(visible(rec.get("id")) + "\n" + visible(rec.get("url"), 120)),
                    Text(scores),
                    Text(visible(rec.get("text"), excerpt)),
                )
            console.print(table)
    return capture.get().rstrip("\n")


_PAGE_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
td, th { border: 1px solid #ccc; padding: 3px 6px; vertical-align: top; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { white-space: pre-wrap; word-break: break-word; max-height: 18em; overflow: auto;
      margin: 0; font-size: 12px; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.4em;
          vertical-align: middle; border: 1px solid #555; }
dl { margin: 0; font-size: 12px; } dt { font-weight: 600; } dd { margin: 0 0 0.2em 0.6em; }
"""


def _esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _stats_table(stats: dict) -> str:
    figures = ("docs", "chars", "tokens")
    head = "".join(f"<th>{f} in</th><th>{f} out</th>" for f in figures)
    body = []
    for r in stats.get("rows", []):
        if r.get("lang") != "all":
            continue
        cells = "".join(
            f'<td class="num">{int(r[f"{f}_{d}"]):,}</td>' for f in figures for d in ("in", "out")
        )
        reasons = ", ".join(r.get("reasons") or [])
        body.append(f"<tr><td>{_esc(r['step'])}</td><td>{_esc(reasons)}</td>{cells}</tr>")
    return (
        f"<table><tr><th>step</th><th>reasons</th>{head}</tr>{''.join(body)}</table>"
        f"<p>Tokens: {_esc(stats.get('tokenizer', ''))}.</p>"
    )


def _funnel_png(out_dir: Path, counts_by_lang: list[dict]) -> bytes:
    png = out_dir / "funnel.png"
    if png.exists():
        return png.read_bytes()
    import tempfile

    from filters.report import funnel_plot

    with tempfile.TemporaryDirectory() as tmp:
        return funnel_plot(counts_by_lang, Path(tmp) / "funnel.png").read_bytes()


def render_html(
    out_dir: str | Path,
    samples: dict[str, list[dict]],
    counts: dict[str, int],
    *,
    seed: int,
    lang: str | None = None,
    reason: str | None = None,
    excerpt: int = 3000,
) -> str:
    """One self-contained page: the funnel plot (embedded), the per-step statistics and the
    samples per outcome. Every value from the data is escaped."""
    from filters.report import reason_colours

    out = Path(out_dir)
    t = pq.read_table(_annotated(out), columns=["lang", "drop_reason"])
    grouped = pa.table(
        {"lang": pc.fill_null(t["lang"], "und"), "outcome": pc.fill_null(t["drop_reason"], KEPT)}
    ).group_by(["lang", "outcome"]).aggregate([("lang", "count")])  # fmt: skip
    funnel = [
        {"lang": r["lang"], "outcome": r["outcome"], "docs": r["lang_count"]}
        for r in grouped.to_pylist()
    ]
    png = base64.b64encode(_funnel_png(out, funnel)).decode("ascii")
    stats_path = out / "stats.json"
    stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
    colours = reason_colours(sorted(counts))
    total = sum(counts.values()) or 1
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; style-src 'unsafe-inline'\">",
        f"<title>Filter inspection: {_esc(out.name)}</title>",
        f"<style>{_PAGE_STYLE}</style></head><body>",
        f"<h1>Filter inspection: {_esc(out)}</h1>",
        f"<p>{sum(counts.values()):,} documents"
        + (f" of language {_esc(lang)}" if lang else "")
        + f"; samples drawn with seed {int(seed)} (the same rows for the same seed).</p>",
        f'<h2>Funnel</h2><img alt="filter funnel per language" src="data:image/png;base64,{png}">',
    ]
    if stats:
        parts += ["<h2>Per-step statistics (all languages)</h2>", _stats_table(stats)]
    parts.append("<h2>Outcomes</h2><ul>")
    shown = [o for o in outcome_order(counts) if reason is None or o == reason]
    for o in outcome_order(counts):
        parts.append(
            f'<li><span class="swatch" style="background:{colours[o]}"></span>'
            + (f'<a href="#o-{_esc(o)}">{_esc(o)}</a>' if o in shown else _esc(o))
            + f": {counts[o]:,} "
            f"({counts[o] / total:.1%})</li>"
        )
    parts.append("</ul>")
    for o in shown:
        rows = samples.get(o) or []
        parts.append(
            f'<h2 id="o-{_esc(o)}"><span class="swatch" style="background:{colours[o]}"></span>'
            f"{_esc(o)} ({counts[o]:,} documents, {len(rows)} shown)</h2>"
        )
        if not rows:
            continue
        parts.append("<table><tr><th>document</th><th>scores</th><th>text</th></tr>")
        for rec in rows:
            scores = "".join(
                f"<dt>{_esc(k)}</dt><dd>{_esc(visible(v, 200))}</dd>" for k, v in _score_fields(rec)
            )
            text = rec.get("text") or ""
            shown = text if len(text) <= excerpt else text[:excerpt] + "…"
            parts.append(
                f"<tr><td>{_esc(rec.get('id'))}<br><small>{_esc(rec.get('url'))}</small><br>"
                f"<i>{_esc(rec.get('title') or '')}</i></td><td><dl>{scores}</dl></td>"
                f"<td><pre>{_esc(shown)}</pre><small>{len(text):,} characters</small></td></tr>"
            )
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_html(
    out_dir: str | Path,
    dest: str | Path,
    *,
    reason: str | None = None,
    lang: str | None = None,
    n: int = 20,
    seed: int = 0,
) -> Path:
    """Write the inspection page of a filter output to `dest`."""
    samples = sample(out_dir, reason=reason, lang=lang, n=n, seed=seed)
    counts = outcome_counts(out_dir, lang)
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(
        render_html(out_dir, samples, counts, seed=seed, lang=lang, reason=reason), encoding="utf-8"
    )
    return dest
