"""Language identification now lives in `common.langid` (the crawler uses it too); this name stays
so `from filters.langid import LanguageIdentifier` keeps working."""

from __future__ import annotations

from common.langid import *  # noqa: F403
from common.langid import LID_FILENAME, LanguageIdentifier, lid176_path

__all__ = ["LID_FILENAME", "LanguageIdentifier", "lid176_path"]
