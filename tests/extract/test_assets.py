"""The Dagster assets `rendered_pages` and `documents` materialise from a lake with a crawl in it."""

from __future__ import annotations

import pytest

from .conftest import write_crawl
from .pages import article, js_page

pytestmark = pytest.mark.timeout(180)


def test_assets_materialise_with_counts_and_reject_metadata(
    tmp_path, subresources, no_browser_leak
):
    from pipelines.graph import materialize_selection
    from pipelines.resources import BrowserResource

    base = subresources.base
    write_crawl(
        tmp_path / "crawl",
        [
            {"url": f"{base}/a", "status": 200, "body": article().encode()},
            {"url": f"{base}/live", "status": 200, "body": js_page(base).encode()},
            {"url": f"{base}/gone", "status": 410, "body": b"gone"},
        ],
    )
    # The crawl was written to the lake's standard place (crawl/) without the raw_pages asset:
    # the lake IO manager hands out a handle to it.
    result = materialize_selection(
        ["rendered_pages", "documents"],
        tmp_path,
        resources={"browser": BrowserResource(pages_in_flight=2, page_timeout_s=20)},
    )
    assert result.success
    materializations = [
        e.event_specific_data.materialization for e in result.get_asset_materialization_events()
    ]
    by_key = {m.asset_key.to_user_string(): m.metadata for m in materializations}
    assert by_key["rendered_pages"]["rendered"].value == 1
    docs = by_key["documents"]
    assert docs["documents"].value == 2 and docs["rejects"].value == 1
    assert docs["rejects_by_reason"].value == {"http_status": 1}
    assert docs["rendered_fraction"].value == 0.5
    assert (tmp_path / "extract" / "documents.parquet").exists()
