"""The bundled sample web: `refinery sampleweb write` and the `sample_web` asset (pages, images,
robots.txt variants and ground-truth labels in the lake), and `refinery sampleweb serve`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from common import lake as lake_mod
from pipelines.stage import Lake, Params, Stage, Summary, param


class SampleWebParams(Params):
    out: Path | None = param(
        None, output=True, help="Output directory (default: the lake's sampleweb/)."
    )
    seed: int = param(0, help="Seed of the generated web.")


class SampleWebSummary(Summary):
    sites: int
    content_pages: int
    pages: int
    images: int
    languages: list[str]
    labels: str

    def text(self) -> str:
        import json

        return json.dumps(self.model_dump(exclude={"outputs"}), indent=2)


def run_sampleweb_write(out_dir: Path | None = None, *, seed: int = 0) -> dict[str, Any]:
    """Build the deterministic sample web; write pages, labels.parquet, sites.json and manifests."""
    from sampleweb import build_web, write_to_lake

    out = Path(out_dir) if out_dir else lake_mod.stage_dir("sampleweb")
    summary = dict(write_to_lake(build_web(seed), out))
    config = {"seed": seed}
    lake_mod.write_manifest(out / "labels.parquet", rows=summary["pages"], config=config)
    lake_mod.write_manifest(out, rows=summary["pages"], config=config, extra={"summary": summary})
    return summary


def write(p: SampleWebParams, lake: Lake) -> SampleWebSummary:
    """Write pages, labels.parquet and sites.json, with manifests."""
    if p.out is not None:
        lake_mod.check_directory(Path(p.out), "--out")
    out = Path(p.out) if p.out else lake.dir("sampleweb")
    s = run_sampleweb_write(out, seed=p.seed)
    figures = {k: s[k] for k in SampleWebSummary.model_fields if k in s}
    return SampleWebSummary(outputs={"sample_web": str(out)}, **figures)


class ServeParams(Params):
    port: int = param(0, help="Shared port for every site (0 picks a free one).")
    first_octet: int = param(10, help="Site i binds 127.0.0.(first_octet + i).")
    seed: int = param(0, help="Seed of the generated web.")
    seeds_out: Path | None = param(None, help="Write the seed URLs here, one per line.")
    labels_out: Path | None = param(None, help="Write labels.parquet with served URLs.")


class ServeSummary(Summary):
    exit_code: int


def serve(p: ServeParams, lake: Lake) -> ServeSummary:
    """Serve every site until Ctrl-C (SIGINT) or SIGTERM."""
    from sampleweb.__main__ import main

    if not 0 <= p.port <= 65535:
        raise ValueError(f"--port {p.port}: not a TCP port; give 1-65535, or 0 to pick a free one")
    argv = ["serve", "--port", str(p.port), "--first-octet", str(p.first_octet)]
    argv += ["--seed", str(p.seed)]
    if p.seeds_out:
        argv += ["--seeds-out", str(p.seeds_out)]
    if p.labels_out:
        argv += ["--labels-out", str(p.labels_out)]
    code = main(argv)
    if code:
        raise SystemExit(code)
    return ServeSummary(exit_code=0)


SAMPLE_WEB = Stage(
    name="sampleweb write",
    params=SampleWebParams,
    run=write,
    description=write.__doc__,
    outputs=("sample_web",),
    group="crawl",
    output_descriptions={
        "sample_web": "The bundled sample web: pages, images, robots.txt variants and labels."
    },
)
SERVE = Stage("sampleweb serve", ServeParams, serve, serve.__doc__)
