"""Content extraction: one crawl record (static or rendered HTML) to a document, or to a reject.

`extract_page(record) -> ExtractResult` is plain Python; Beam, the CLI and Dagster only call it.
"""

from crawlers.extract.page import ExtractConfig, ExtractResult, doc_id, extract_page

__all__ = ["ExtractConfig", "ExtractResult", "doc_id", "extract_page"]
