"""The stage table: every stage of Refinery, declared once (see `pipelines.stage`).

The CLI (`pipelines.cli`) and the Dagster graph (`pipelines.graph`) are both derived from it.
"""

from __future__ import annotations

from pipelines.stage import Stage
from pipelines.stages.crawl import CRAWL
from pipelines.stages.extract import EXTRACT, RENDER

STAGES: list[Stage] = [CRAWL, RENDER, EXTRACT]

# Help of the CLI's command groups.
GROUPS = {}
