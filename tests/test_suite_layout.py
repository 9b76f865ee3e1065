"""The suite's own layout: the shared sample-web lake's work unit, the quality models' cache key."""

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


def test_the_quality_models_cache_is_keyed_by_the_code_that_builds_them(tmp_path):
    from tests.conftest import quality_code_key

    (tmp_path / "filters" / "quality").mkdir(parents=True)
    fit = tmp_path / "filters" / "quality" / "fit.py"
    fit.write_text("QUANTIZE_CUTOFF = 10_000\n")
    (tmp_path / "requirements.lock").write_text("fasttext-numpy2==0.10.4\n")
    before = quality_code_key(tmp_path)
    assert quality_code_key(tmp_path) == before
    fit.write_text("QUANTIZE_CUTOFF = 2_000\n")
    assert quality_code_key(tmp_path) != before
    fit.write_text("QUANTIZE_CUTOFF = 10_000\n")
    (tmp_path / "requirements.lock").write_text("fasttext-numpy2==0.10.5\n")
    assert quality_code_key(tmp_path) != before
