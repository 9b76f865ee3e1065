"""Shared fixtures of the import tests."""

from __future__ import annotations

import pytest

from tests.imports.archives import RobotsServer


@pytest.fixture(scope="module")
def robots():
    """A loopback robots.txt server for the module's archives (stops with the module)."""
    with RobotsServer() as server:
        yield server
