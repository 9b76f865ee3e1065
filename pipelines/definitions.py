"""Dagster definitions: every asset, check and resource of Refinery, derived from the stage
table (`pipelines.stages.STAGES`) by `pipelines.graph`. $REFINERY_ENV picks the resource set
(local: the embedded defaults; cluster: from the environment)."""

from __future__ import annotations

from pipelines.graph import build_definitions

defs = build_definitions()
