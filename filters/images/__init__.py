"""Image-text filters over rows (plain Python, no orchestration): caption cleaning
(captions.py), exact/perceptual/URL de-duplication (dedup.py), interleaved-document filtering
(interleaved.py), knowledge-domain selection (domains.py) and their thresholds (config.py)."""

from filters.images.captions import (
    BAD_CAPTION,
    CaptionVerdict,
    caption_rows,
    clean_caption,
    clean_captions,
    normalise_alt,
)
from filters.images.config import (
    CaptionConfig,
    DedupConfig,
    DomainSelectConfig,
    ImageFilterConfig,
    InterleavedConfig,
    image_config_from_dict,
    load_image_config,
)
from filters.images.dedup import (
    colour_confirm,
    dedup_rows,
    find_duplicates,
    hamming,
    phash_bytes,
    phash_hex,
    repeated_urls,
)
from filters.images.domains import (
    DOMAIN_IMAGES,
    DomainsSpec,
    load_domain_spec,
    select_domains,
)
from filters.images.interleaved import (
    DOC_REPORT,
    INTERLEAVED_OUT,
    filter_documents,
)

__all__ = [
    "BAD_CAPTION",
    "DOC_REPORT",
    "DOMAIN_IMAGES",
    "INTERLEAVED_OUT",
    "CaptionConfig",
    "CaptionVerdict",
    "DedupConfig",
    "DomainSelectConfig",
    "DomainsSpec",
    "ImageFilterConfig",
    "InterleavedConfig",
    "caption_rows",
    "clean_caption",
    "clean_captions",
    "colour_confirm",
    "dedup_rows",
    "filter_documents",
    "find_duplicates",
    "hamming",
    "image_config_from_dict",
    "load_domain_spec",
    "load_image_config",
    "normalise_alt",
    "phash_bytes",
    "phash_hex",
    "repeated_urls",
    "select_domains",
]
