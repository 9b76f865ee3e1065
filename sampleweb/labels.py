"""The sample web's content pages as labelled documents, for training and testing filters.

filters/ never imports the sample web: callers (the CLI's `--labels sampleweb[:SEED]`, the
default quality models' stage, tests, benchmarks) build the rows here and pass them in.
"""

from __future__ import annotations

from pathlib import Path

from .build import build_web

SPEC = "sampleweb"


def _document(site: str, path: str, lab: dict) -> dict | None:
    """One content page's labelled document, or None for a page that is not content."""
    if not lab.get("is_content") or not lab.get("main_text"):
        return None
    return {
        "id": f"{site}{path}",
        "url": f"http://{site}{path}",
        "text": lab["main_text"],
        "lang": lab.get("lang"),
        "quality": lab.get("quality"),
        "is_reference": bool(lab.get("is_reference")),
        "dup_cluster": lab.get("dup_cluster"),
        "page_type": lab.get("page_type"),
        "pii": lab.get("pii") or [],
        "pii_decoys": lab.get("pii_decoys") or [],
        "training_allowed": bool(lab.get("expect_training_allowed", True)),
    }


def labelled_documents(seed: int = 0) -> list[dict]:
    """The sample web's content pages as labelled documents (ground-truth main_text as text)."""
    web = build_web(seed=seed)
    docs = (_document(site, path, page.labels) for (site, path), page in sorted(web.pages.items()))
    return [d for d in docs if d is not None]


def labelled_documents_from_file(labels_parquet: str | Path) -> list[dict]:
    """The same documents from a written sample web's labels.parquet (`refinery sampleweb
    write`, the `sample_web` asset): equal to `labelled_documents(seed)` of the web written."""
    import pyarrow.parquet as pq

    path = Path(labels_parquet)
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: no sample web labels (run `refinery sampleweb write --out {path.parent}`)"
        )
    rows = sorted(pq.read_table(path).to_pylist(), key=lambda r: (r["site"], r["path"]))
    docs = (_document(r["site"], r["path"], r) for r in rows)
    return [d for d in docs if d is not None]


def parse_spec(spec: str) -> int | None:
    """The seed of a `sampleweb[:SEED]` labels spec, or None when spec names something else."""
    spec = str(spec)
    if spec != SPEC and not spec.startswith(SPEC + ":"):
        return None
    seed = spec.split(":", 1)[1] if ":" in spec else "0"
    try:
        return int(seed)
    except ValueError:
        raise ValueError(
            f"--labels {spec}: the seed after `{SPEC}:` must be an integer, e.g. `{SPEC}:0`"
        ) from None
