"""Image-text data, steps 1-2: consent-checked image fetch through the crawl's downloader, safe decode.

`fetch_images(refs, out_dir, cfg)` writes `<out_dir>/fetched.parquet` (one row per ref) and the
kept images under `<out_dir>/images/`; `load_refs(extract_dir)` builds the refs from an extract
output.
"""

from crawlers.images.config import ImageFetchConfig
from crawlers.images.consent import HeaderGate, TrainingConsentLayer, xrt_opt_out
from crawlers.images.decode import Decoded, decode_image, sniff
from crawlers.images.fetch import (
    DROP_REASONS,
    FETCHED,
    FETCHED_SCHEMA,
    IMAGES,
    classify,
    fetch_images,
    fetch_images_async,
    load_refs,
    page_opt_out,
    ref_id,
)
from crawlers.images.journal import JOURNAL

__all__ = [
    "DROP_REASONS",
    "FETCHED",
    "FETCHED_SCHEMA",
    "IMAGES",
    "JOURNAL",
    "Decoded",
    "HeaderGate",
    "ImageFetchConfig",
    "TrainingConsentLayer",
    "classify",
    "decode_image",
    "fetch_images",
    "fetch_images_async",
    "load_refs",
    "page_opt_out",
    "ref_id",
    "sniff",
    "xrt_opt_out",
]
