"""Suite-wide fixtures."""

import hashlib
import os
from pathlib import Path

# Before any test module imports torch (open_clip, the image tests): training/__init__.py sets
# this for the CLI and the graph, but a pytest worker may load torch first through another
# package, and the demo test trains in the worker, beside the other worker's tests. OpenMP
# threads that spin-wait stall each other there: a training step of the tiny model took 18 s
# with two active threads on a loaded 2-core machine, 1.6 s passive.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import logging

import pytest

# Dagster's ephemeral instances keep in-memory SQLite connections (sqlalchemy NullPool) that the
# garbage collector finalizes later, often in another thread, where sqlite3 refuses them and
# sqlalchemy logs the error with its traceback. Python 3.11 formats a traceback's carets with
# ast.parse: when that collection runs inside a test's own ast.parse (AST nodes allocate), the
# nested parse upsets CPython's interpreter-wide AST recursion depth and the test's parse fails
# with "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905; twice in
# CI runs). Those finalizer errors say nothing about the code under test: not logged.
logging.getLogger("sqlalchemy.pool").setLevel(logging.CRITICAL)

# What the default quality models are built by: a change to any of these files (or to the locked
# packages) gives the cache a new directory, so a test never scores with a set built by older code.
QUALITY_CODE = ("filters/quality/*.py", "filters/labels.py", "requirements.lock")


def quality_code_key(root: Path) -> str:
    h = hashlib.sha256()
    for pattern in QUALITY_CODE:
        for path in sorted(root.glob(pattern)):
            h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


@pytest.fixture(scope="session", autouse=True)
def shared_quality_defaults(request, tmp_path_factory):
    """One cache of the default quality models for every test session on this checkout, under
    pytest's cache directory (.pytest_cache/d/quality-defaults/<code key>/): sets are keyed by
    their training data and recipe and renamed into place whole, and the directory by the code
    that builds them, so the demo, the UI test, the killed demo runs -- subprocesses inherit the
    variable -- and pytest-xdist's workers train them at most once, and a second `make test-fast`
    not at all. A clean checkout (CI) builds them once. Without pytest's cache plugin the cache
    is per run, beside the base temp dir. A cache already named by $REFINERY_QUALITY_DEFAULTS is
    used as it is."""
    from filters.quality.default import ENV_ROOT

    if os.environ.get(ENV_ROOT):
        yield
        return
    repo = Path(str(request.config.rootpath))
    cache = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider
    if cache is not None:
        base = cache.mkdir("quality-defaults")
    else:  # beside the session's (every xdist worker's) own base temp dir
        base = tmp_path_factory.getbasetemp().parent / "quality-defaults"
    shared = base / quality_code_key(repo)
    shared.mkdir(parents=True, exist_ok=True)
    os.environ[ENV_ROOT] = str(shared)
    yield
    os.environ.pop(ENV_ROOT, None)


# Under pytest-xdist (`make test-fast`: two workers, a module per work unit, in collection order,
# `-n 2 --dist loadfile --no-loadscope-reorder`) the longest modules go first, so each worker starts
# on one of them and the short modules fill in around them; xdist's default order puts the modules
# with the most tests first and the one-test whole-graph modules last.
FIRST = ("tests/test_demo.py", "tests/test_dagster_ui.py")


def pytest_collection_modifyitems(config, items):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # one process: pytest's own order

    def rank(item) -> int:
        module = item.nodeid.split("::")[0]
        if module in FIRST:
            return FIRST.index(module)
        return len(FIRST) if item.get_closest_marker("slow") else len(FIRST) + 1

    items.sort(key=rank)  # stable: the order within each rank is pytest's


@pytest.fixture(scope="session")
def sample_lake(tmp_path_factory):
    """The sample web served for the whole session, and its crawl and extraction,
    each built on first use and shared by every module that reads them (tests/samplelake.py)."""
    from sampleweb import build_web, serve
    from tests.samplelake import FIRST_OCTET, SampleLake

    with serve(build_web(0), first_octet=FIRST_OCTET) as served:
        yield SampleLake(served, tmp_path_factory.mktemp("sample-lake"))


# The modules that read the shared sample-web lake (`sample_lake`, tests/samplelake.py) run as one
# work unit, on one worker, so the session builds the lake once: its URLs carry the port of the
# worker's own server, so two workers cannot share one.
SAMPLE_LAKE_MODULES = (
    "tests/crawl/test_sampleweb_crawl.py",
    "tests/crawl/test_shards.py",
    "tests/pipelines/test_checks.py",
    "tests/images/test_sampleweb_images.py",
    "tests/extract/test_sampleweb.py",
)


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, with the sample-lake modules in one work unit."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SampleLakeScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = super()._split_scope(nodeid)
            return "sample-lake" if module in SAMPLE_LAKE_MODULES else module

    return SampleLakeScheduling(config, log)
