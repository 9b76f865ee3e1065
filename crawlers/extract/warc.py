"""Read the crawl: its pages tables (one per host-hash shard) and single records out of its WARCs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator


@dataclass
class WarcResponse:
    """The HTTP response stored in one WARC record."""

    status: int | None
    headers: dict[str, str]
    body: bytes


def find_pages_files(crawl_dir: str | Path) -> list[Path]:
    """All pages.parquet files of a crawl: DIR/pages.parquet and DIR/shard=<k>/pages.parquet."""
    crawl_dir = Path(crawl_dir)
    found = sorted(crawl_dir.glob("pages.parquet")) + sorted(
        crawl_dir.glob("shard=*/pages.parquet")
    )
    if not found:
        raise FileNotFoundError(
            f"{crawl_dir}: no pages.parquet (nor shard=*/pages.parquet); point --crawl at the "
            "directory `refinery crawl --out` wrote"
        )
    return found


def read_response(warc_path: str | Path, offset: int, length: int | None = None) -> WarcResponse:
    """Read the response record that starts at `offset` (skipping a request record if one is there)."""
    with open(warc_path, "rb") as fh:
        fh.seek(int(offset))
        for n, record in enumerate(ArchiveIterator(fh)):
            if record.rec_type in ("response", "resource"):
                status = None
                headers: dict[str, str] = {}
                if record.http_headers is not None:
                    code = record.http_headers.get_statuscode()
                    status = int(code) if code and code.isdigit() else None
                    headers = {k.lower(): v for k, v in record.http_headers.headers}
                return WarcResponse(status, headers, record.content_stream().read())
            if n >= 2:
                break
    raise ValueError(
        f"{warc_path}@{offset}: no response record there; the pages table and WARC disagree"
    )
