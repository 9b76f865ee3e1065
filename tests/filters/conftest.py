"""Shared fixtures: the sample web's labelled documents, a documents.parquet and trained models."""

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from filters.labels import sampleweb_documents


@pytest.fixture(scope="session")
def labelled_docs() -> list[dict]:
    """The sample web's content pages with ground-truth text and labels."""
    return sampleweb_documents(seed=0)


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


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory, labelled_docs, languages) -> Path:
    """Reference-vs-crawl quality models for every sample-web language."""
    from filters.labels import build_training_set
    from filters.quality import train_model

    d = tmp_path_factory.mktemp("models")
    for lang in languages:
        train_model(build_training_set(labelled_docs, lang, "reference"), d / f"{lang}.bin")
    return d
