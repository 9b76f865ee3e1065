"""Shared fixtures: one built web per session, and a served copy on 127.0.0.40+."""

from __future__ import annotations

import pytest

from sampleweb import build_web, serve


@pytest.fixture(scope="session")
def web():
    """The default sample web (seed 0)."""
    return build_web(0)


@pytest.fixture(scope="session")
def served(web):
    """The sample web served on loopback; stopped at the end of the session."""
    sw = serve(web, first_octet=40, port=0)
    try:
        yield sw
    finally:
        sw.stop()
