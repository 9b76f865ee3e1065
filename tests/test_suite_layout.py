"""The suite's own layout: every module that reads the shared sample-web lake runs in its work unit."""

import re
from pathlib import Path

from tests.conftest import SAMPLE_LAKE_MODULES

ROOT = Path(__file__).resolve().parent.parent
# the session fixture, and the crawl package's fixture that hands out its crawl
USES = re.compile(r"\b(sample_lake|sampleweb_single)\b")


def test_every_module_reading_the_sample_lake_is_in_its_work_unit():
    readers = sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").rglob("test_*.py")
        if p.name != Path(__file__).name and USES.search(p.read_text())
    )
    assert readers == sorted(SAMPLE_LAKE_MODULES), (
        "a module that takes `sample_lake` (or `sampleweb_single`) must be listed in "
        "tests/conftest.py SAMPLE_LAKE_MODULES, so that one worker builds the lake once"
    )
