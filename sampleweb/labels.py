"""The sample web's content pages as labelled documents, for training and testing filters.

filters/ never imports the sample web: callers (the CLI's `--labels sampleweb[:SEED]`, the
default quality models' stage, tests, benchmarks) build the rows here and pass them in.
"""

from __future__ import annotations

from .build import build_web

SPEC = "sampleweb"


def labelled_documents(seed: int = 0) -> list[dict]:
    """The sample web's content pages as labelled documents (ground-truth main_text as text)."""
    web = build_web(seed=seed)
    rows = []
    for (site, path), page in sorted(web.pages.items()):
        lab = page.labels
        if not lab.get("is_content") or not lab.get("main_text"):
            continue
        rows.append(
            {
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
        )
    return rows


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
