"""Dagster assets, one module per stage area; `pipelines.definitions` loads them all."""
