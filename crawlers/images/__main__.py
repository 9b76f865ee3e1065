"""`python -m crawlers.images SOURCE OUT [--config JSON] [--resume]`: fetch the images of SOURCE.

SOURCE is an `extract` output directory (image_refs.parquet + documents.parquet; the consent
ledger of the lake it sits in applies) or a Parquet file of refs already joined with their page's
flags (id, doc_id, src, alt, training_allowed, optionally noai / noimageai; only a
training_allowed that is the boolean true is consent). Prints the summary as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

from common.consent import Consent, ledger_files_for
from crawlers.images.config import ImageFetchConfig
from crawlers.images.fetch import fetch_images, load_refs


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the fetch, print the summary."""
    ap = argparse.ArgumentParser(prog="python -m crawlers.images", description=__doc__)
    ap.add_argument("source", type=Path, help="extract output directory, or a refs .parquet file")
    ap.add_argument("out", type=Path, help="output directory")
    ap.add_argument("--config", default="{}", help="ImageFetchConfig fields as a JSON object")
    ap.add_argument("--resume", action="store_true", help="continue a killed run in OUT")
    args = ap.parse_args(argv)
    try:
        cfg = ImageFetchConfig.model_validate(json.loads(args.config))
    except (ValueError, json.JSONDecodeError) as exc:
        ap.error(f"--config: {exc}")
    if args.source.is_dir():
        # The consent ledger of the lake the extract output belongs to, if it is in one.
        refs = load_refs(args.source, Consent.load(None, ledger_files_for(None, args.source)))
    else:
        refs = pq.read_table(args.source).to_pylist()
    sources = (
        [args.source / "image_refs.parquet", args.source / "documents.parquet"]
        if args.source.is_dir()
        else [args.source]
    )
    summary = fetch_images(refs, args.out, cfg, resume=args.resume, inputs=list(map(str, sources)))
    json.dump(summary, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
