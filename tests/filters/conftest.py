"""Shared fixtures: the sample web's labelled documents, a documents.parquet and trained models."""

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sampleweb.labels import labelled_documents


@pytest.fixture(scope="session")
def labelled_docs() -> list[dict]:
    """The sample web's content pages with ground-truth text and labels."""
    return labelled_documents(seed=0)


@pytest.fixture(scope="session")
def languages(labelled_docs) -> list[str]:
    """Languages present in the sample web."""
    return sorted({d["lang"] for d in labelled_docs if d["lang"]})


@pytest.fixture(scope="session")
def docs_dir(tmp_path_factory, labelled_docs) -> Path:
    """DIR2 with a documents.parquet built from the sample web labels (as extraction would)."""
    d = tmp_path_factory.mktemp("docs")
    rows = [
        {
            "id": doc["id"],
            "url": doc["url"],
            "text": doc["text"],
            "title": doc["id"].rsplit("/", 1)[-1],
            "training_allowed": doc["training_allowed"],
            "rendered": False,
        }
        for doc in labelled_docs
    ]
    pq.write_table(pa.Table.from_pylist(rows), d / "documents.parquet")
    return d


@pytest.fixture(scope="session", autouse=True)
def quality_defaults_root(tmp_path_factory) -> Path:
    """One cache of the default quality models per test session: `run_filter` without models
    finds it through $REFINERY_QUALITY_DEFAULTS, so the set is built at most once. A cache
    directory already named by $REFINERY_QUALITY_DEFAULTS is reused (sets are keyed by their
    training data and recipe, so a stale set is never picked up)."""
    from filters.quality.default import ENV_ROOT

    old = os.environ.get(ENV_ROOT)
    root = Path(old) if old else tmp_path_factory.mktemp("quality-defaults")
    os.environ[ENV_ROOT] = str(root)
    yield root
    if old is None:
        os.environ.pop(ENV_ROOT, None)
    else:
        os.environ[ENV_ROOT] = old


@pytest.fixture(scope="session")
def models_dir(quality_defaults_root, labelled_docs) -> Path:
    """The default quality models (a model per sample-web language from its reference pages,
    plus `multilingual.bin`), built once per session."""
    from filters.quality.default import ensure_default_models

    return ensure_default_models(quality_defaults_root, rows=labelled_docs)
