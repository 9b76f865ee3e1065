"""Suite-wide fixtures."""

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def shared_quality_defaults(tmp_path_factory):
    """One cache of the default quality models for the whole session (sets are keyed by their
    training data and recipe and renamed into place whole), so the demo, the UI test and the
    killed demo runs -- subprocesses inherit the variable -- train them at most once. A cache
    already named by $REFINERY_QUALITY_DEFAULTS is used as it is."""
    from filters.quality.default import ENV_ROOT

    if os.environ.get(ENV_ROOT):
        yield
        return
    os.environ[ENV_ROOT] = str(tmp_path_factory.mktemp("quality-defaults"))
    yield
    os.environ.pop(ENV_ROOT, None)
