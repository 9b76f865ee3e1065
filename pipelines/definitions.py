"""Dagster definitions: every asset, check and resource of Refinery, assembled in one place."""

from __future__ import annotations

from dagster import (
    Definitions,
    load_asset_checks_from_package_module,
    load_assets_from_package_module,
)

from pipelines import assets as assets_package
from pipelines.resources import default_resources

defs = Definitions(
    assets=load_assets_from_package_module(assets_package),
    asset_checks=load_asset_checks_from_package_module(assets_package),
    resources=default_resources(),
)
