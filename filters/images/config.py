"""Thresholds of the image-text filters (captions, de-duplication, interleaved documents, domain
selection) in one pydantic model, loadable from YAML; errors name the file and the field."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from common import yamlio
from filters.config import ConfigError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CaptionConfig(_Strict):
    """Alt-text cleaning: lengths count characters of the normalised caption; CJK captions
    (Han, kana, Hangul) are short in characters, so they have their own minimum."""

    min_chars: int = Field(5, ge=0)
    min_chars_cjk: int = Field(2, ge=0)
    max_chars: int = Field(400, ge=1)
    max_words: int = Field(80, ge=1)
    # Extra case-insensitive regexes (Python `re`, searched in the normalised caption); a match
    # rejects the caption as `bad_caption` with detail `boilerplate`.
    extra_boilerplate_patterns: list[str] = Field(default_factory=list)
    # Extra whole-caption words that are generic ("graphic", "Bild"), rejected as `generic`.
    extra_generic_words: list[str] = Field(default_factory=list)


class DedupConfig(_Strict):
    """Exact (sha256) and perceptual (64-bit pHash) de-duplication, and repeated image URLs."""

    exact: bool = True
    perceptual: bool = True
    # Two pHashes at most this many bits apart are the same image. The banding makes d+1 bands of
    # 64/(d+1) bits, so candidate pairs grow as n^2 / 2^(64/(d+1)): keep d small (<= 8).
    phash_max_distance: int = Field(4, ge=0, le=16)
    # pHash keeps grey layout only; a pHash match is confirmed when no cell of the two images'
    # 8x8 colour thumbnails differs by more than this (0-1, per channel). None: pHash alone.
    # Used when the stored image files are at hand (dedup_rows' image_root).
    confirm_max_colour_diff: float | None = Field(0.06, ge=0, le=1)
    # An image URL referenced by more than this many distinct documents is a logo, an ad or a
    # tracking pixel (OBELICS: 10); 0 disables the rule.
    repeated_url_threshold: int = Field(10, ge=0)


class InterleavedConfig(_Strict):
    """Document-level rules for interleaved documents, counted after image drops (OBELICS: 1-30
    images per document)."""

    min_images: int = Field(1, ge=0)
    max_images: int = Field(30, ge=1)
    min_text_chars: int = Field(200, ge=0)
    # Kept images per 1,000 characters of text; above it the document is an image gallery.
    max_images_per_1k_chars: float = Field(10.0, gt=0)

    @model_validator(mode="after")
    def _order(self) -> InterleavedConfig:
        if self.min_images > self.max_images:
            raise ValueError(
                f"min_images ({self.min_images}) is above max_images ({self.max_images})"
            )
        return self


class DomainSelectConfig(_Strict):
    """Defaults for knowledge-domain selection; a domain spec's own `margin`/`min_similarity`
    (top level or per domain) take precedence."""

    # The domain's CLIP similarity must beat the best other domain's by this much.
    margin: float = Field(0.02, ge=0)
    # And be at least this (cosine similarity of image and prompt embeddings).
    min_similarity: float = Field(0.2, ge=-1, le=1)
    # Images per call to the similarity scorer.
    batch_size: int = Field(256, ge=1)


class ImageFilterConfig(_Strict):
    """All thresholds of filters/images/."""

    captions: CaptionConfig = Field(default_factory=CaptionConfig)
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    interleaved: InterleavedConfig = Field(default_factory=InterleavedConfig)
    domains: DomainSelectConfig = Field(default_factory=DomainSelectConfig)


def image_config_from_dict(data: object, source: str = "<config>") -> ImageFilterConfig:
    """Validate a mapping; the error lists `field.path: message` for every problem."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping, got {type(data).__name__}")
    try:
        return ImageFilterConfig.model_validate(data)
    except ValidationError as exc:
        from common.errors import validation_problems

        raise ConfigError(
            f"{source}: invalid image filter config: {validation_problems(exc, model=ImageFilterConfig)}"
        ) from exc


def load_image_config(path: str | Path | None = None) -> ImageFilterConfig:
    """Load and validate a YAML image filter config; None gives the defaults."""
    if path is None:
        return ImageFilterConfig()
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: image filter config not found")
    try:
        data = yamlio.load_file(path) or {}
    except yamlio.YamlFileError as exc:
        raise ConfigError(str(exc)) from None
    return image_config_from_dict(data, source=str(path))
