"""Finding Chromium for Playwright: explicit path, env override, Playwright's own, the system's."""

from __future__ import annotations

import os
import stat

import pytest

from crawlers import browser


def test_explicit_path_must_be_executable(tmp_path):
    fake = tmp_path / "chrome"
    fake.write_text("#!/bin/sh\n")
    with pytest.raises(FileNotFoundError, match="not an executable"):
        browser.find_chromium(fake)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    assert browser.find_chromium(fake) == fake


def test_env_override_wins_over_system(monkeypatch, tmp_path):
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("REFINERY_CHROMIUM", str(fake))
    assert browser.find_chromium() == fake


def test_playwright_bundled_browser_is_preferred(monkeypatch, tmp_path):
    exe = tmp_path / "chromium-1200" / "chrome-linux" / "chrome"
    exe.parent.mkdir(parents=True)
    exe.write_text("")
    exe.chmod(0o755)
    monkeypatch.delenv("REFINERY_CHROMIUM", raising=False)
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path))
    assert browser.find_chromium() == exe


def test_nothing_found_says_how_to_fix(monkeypatch, tmp_path):
    monkeypatch.delenv("REFINERY_CHROMIUM", raising=False)
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="playwright install"):
        browser.find_chromium()


def test_this_machine_has_a_chromium():
    path = browser.find_chromium()
    assert os.access(path, os.X_OK)
