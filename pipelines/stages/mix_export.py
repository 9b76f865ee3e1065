"""`refinery mix export MIXDIR --format megatron|mds|hf --out DIR`: a built mixture in the formats
trainers read (`training.mixture.export`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipelines.stage import Lake, Params, Stage, Summary, param


class MixExportParams(Params):
    mix_dir: Path = param(argument=True, help="A built mixture directory.")
    format: str = param(
        ...,
        help="megatron (Megatron-LM .bin/.idx indexed dataset), mds (MosaicML streaming) or hf "
        "(Parquet that datasets.load_dataset reads).",
    )
    out: Path = param(..., help="Output directory (a previous export there is replaced).")


class MixExportSummary(Summary):
    format: str
    out: str
    datasets: list[dict[str, Any]]

    def text(self) -> str:
        lines = [f"{self.format} export -> {self.out}"]
        for d in self.datasets:
            lines.append(
                f"  {d['name']}: {d['documents']:,} documents, {d['tokens']:,} tokens, "
                f"{len(d['stages'])} stage(s), files: {', '.join(d['files'])}"
            )
        return "\n".join(lines)


def mix_export(p: MixExportParams, lake_: Lake) -> MixExportSummary:
    """Write a built mixture as Megatron-LM, MosaicML streaming (MDS) or Hugging Face datasets."""
    from training.mixture.export import export_mixture

    doc = export_mixture(p.mix_dir, p.format, p.out)
    datasets = [
        {k: d[k] for k in ("name", "documents", "tokens", "stages", "files")}
        for d in doc["datasets"]
    ]
    return MixExportSummary(format=p.format, out=str(p.out), datasets=datasets)


MIX_EXPORT = Stage("mix export", MixExportParams, mix_export, mix_export.__doc__)
