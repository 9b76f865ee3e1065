"""What a check returns: passed, a one-line verdict with its figures, and the figures.

Every domain keeps its own checks (`crawlers/checks.py`, `filters/checks.py`,
`training/checks.py`, `training/mixture/checks.py`, `crawlers/images/checks.py`): plain functions
that read a stage's output and return a `CheckOutcome`; the stage declarations in `pipelines/`
point at them and Dagster wraps them in asset checks. A missing or malformed dataset is not a
failed check but an error: it raises, naming the file, the field and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

Figure = int | float | str | bool


@dataclass(frozen=True)
class CheckOutcome:
    """The verdict of one check: passed, one line with the figures, and the figures."""

    passed: bool
    description: str
    metadata: dict[str, Figure] = field(default_factory=dict)


def _require(path: Path, columns: list[str], fix: str) -> None:
    """A clear error naming the file, the missing column(s) and the fix."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file; {fix}")
    names = pq.read_schema(path).names
    missing = [c for c in columns if c not in names]
    if missing:
        raise ValueError(
            f"{path}: missing column(s) {', '.join(missing)}; {fix} (this check reads "
            f"{', '.join(columns)})"
        )


def _read_columns(path: Path, columns: list[str], fix: str) -> pa.Table:
    """Read `columns` of a Parquet file, after `_require`."""
    _require(path, columns, fix)
    return pq.read_table(path, columns=columns)


def _first(values: list[Any]) -> str:
    return str(values[0]) if values else ""
