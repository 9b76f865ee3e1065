"""Mixture stage entry points: train the tokenizer, validate / build / report a mixture."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipelines import lake

DEFAULT_TOKENIZER_SOURCES = ("filter/documents.parquet",)
MIXTURES_DIR = Path(__file__).resolve().parents[2] / "training" / "mixtures"


def run_tokenizer_train(
    out: str | Path | None = None,
    *,
    vocab_size: int = 4096,
    sources: Sequence[str | Path] | None = None,
    sample_tokens: int = 2_000_000,
    seed: int = 0,
    lake_root: Path | None = None,
) -> dict[str, Any]:
    """Train the byte-level BPE tokenizer on a sample of the lake; default out: lake tokenizer/tokenizer.json."""
    from training.tokenizer import (
        expand_sources,
        load_tokenizer,
        sample_texts,
        special_token_ids,
        train_tokenizer,
    )

    root = lake_root or lake.lake_root()
    out = Path(out) if out else lake.stage_dir("tokenizer", root) / "tokenizer.json"
    patterns = list(sources) if sources else [str(root / p) for p in DEFAULT_TOKENIZER_SOURCES]
    files = expand_sources(patterns)
    texts = sample_texts(files, sample_tokens, seed=seed)
    t0 = time.perf_counter()
    train_tokenizer(texts, vocab_size, out)
    tok = load_tokenizer(out)
    lake.write_manifest(
        out,
        rows=None,
        inputs=files,
        config={"vocab_size": vocab_size, "sample_tokens": sample_tokens, "seed": seed},
        extra={"vocab_size": tok.get_vocab_size(), "special_tokens": special_token_ids(tok)},
    )
    return {
        "path": str(out),
        "vocab_size": tok.get_vocab_size(),
        "requested_vocab_size": vocab_size,
        "sample_documents": len(texts),
        "sample_chars": sum(len(t) for t in texts),
        "sources": [str(f) for f in files],
        "special_tokens": special_token_ids(tok),
        "seconds": round(time.perf_counter() - t0, 2),
    }


def resolve_spec(spec: str | Path) -> Path:
    """A spec path as given, or a name under training/mixtures (e.g. `tiny/pretrain`)."""
    p = Path(spec)
    if p.exists():
        return p
    for cand in (MIXTURES_DIR / spec, MIXTURES_DIR / f"{spec}.yaml"):
        if cand.exists():
            return cand
    raise FileNotFoundError(
        f"mixture spec {spec} not found (neither a file nor a name under {MIXTURES_DIR})"
    )


def run_mix_validate(
    spec_path: str | Path, *, check_data: bool = True, lake_root: Path | None = None
) -> dict[str, Any]:
    """Validate a spec (schema; with check_data also paths, columns and `where` predicates)."""
    from training.mixture.sources import check_spec_data
    from training.mixture.spec import load_spec

    path = resolve_spec(spec_path)
    spec = load_spec(path)
    counts, shortfalls = {}, []
    if check_data:
        from training.mixture.builder import plan_mixture

        root = lake_root or lake.lake_root()
        counts = check_spec_data(spec, path.parent, root)
        # The sampling plan on the real data: a max_epochs (or data) shortfall fails here, as in build.
        shortfalls = plan_mixture(path, lake_root=root)["shortfalls"]
    return {"spec": str(path), "name": spec.name, "buckets": sorted(spec.buckets),
            "weights": spec.effective_weights(), "rows_offered": counts,
            "shortfalls": shortfalls}  # fmt: skip


def run_mix_build(
    spec_path: str | Path,
    out_dir: str | Path,
    *,
    runner: str | None = None,
    pipeline_args: Sequence[str] = (),
    lake_root: Path | None = None,
) -> dict[str, Any]:
    """Build a mixture: in process when runner is None, else as a Beam pipeline on that runner.

    `lake/...` paths in the spec resolve against lake_root (default $REFINERY_HOME or ./lake).
    """
    path = resolve_spec(spec_path)
    root = lake_root or lake.lake_root()
    out_dir = Path(out_dir)
    t0 = time.perf_counter()
    if runner is None:
        from training.mixture.builder import build_mixture

        manifest = build_mixture(path, out_dir, lake_root=root)
    else:
        from pipelines.beam.mix import build_mixture_beam

        args = [f"--runner={runner}", *pipeline_args]
        manifest = build_mixture_beam(path, out_dir, pipeline_args=args, lake_root=root)
    seconds = time.perf_counter() - t0
    _stamp_lake_fields(out_dir, path)
    report = run_mix_report(out_dir)
    return {
        "name": manifest["name"],
        "out_dir": str(out_dir),
        "num_sequences": manifest["num_sequences"],
        "tokens": manifest["tokens"],
        "shards": len(manifest["shards"]),
        "eval_sets": len(manifest["eval"]),
        "waste_fraction": manifest["waste_fraction"],
        "shortfalls": manifest["shortfalls"],
        "checks_ok": all(c["ok"] for c in manifest["checks"]),
        "tokens_per_s": manifest["tokens"] / seconds if seconds > 0 else None,
        "seconds": round(seconds, 2),
        "markdown": report["markdown"],
        "plot": report["plot"],
    }


def _stamp_lake_fields(out_dir: Path, spec_path: Path) -> None:
    """Add the lake's common manifest fields (schema_version, rows, inputs, written_at) to manifest.json."""
    path = out_dir / "manifest.json"
    doc = json.loads(path.read_text())
    doc.update({
        "dataset": out_dir.name, "schema_version": lake.SCHEMA_VERSION, "rows": doc["num_sequences"],
        "inputs": [str(spec_path)] + sorted({s["path"] for s in doc["sources"]}),
        "config_sha256": doc["spec_sha256"], "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })  # fmt: skip
    tmp = path.with_name("manifest.json.tmp")
    tmp.write_text(json.dumps(doc, indent=2))
    os.replace(tmp, path)


def run_mix_report(mix_dir: str | Path) -> dict[str, Any]:
    """Token accounting of a built mixture: rows, Markdown, summary lines and DIR/report.png."""
    from training.loader import read_manifest
    from training.mixture.report import (
        accounting_rows,
        markdown_table,
        plot_composition,
        summary_lines,
    )

    mix_dir = Path(mix_dir)
    manifest = read_manifest(mix_dir)
    plot = plot_composition(manifest, mix_dir / "report.png")
    return {
        "name": manifest["name"],
        "rows": accounting_rows(manifest),
        "summary": summary_lines(manifest),
        "markdown": markdown_table(manifest),
        "plot": str(plot),
        "checks": manifest.get("checks", []),
        "shortfalls": manifest.get("shortfalls", []),
    }
