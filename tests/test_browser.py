"""Finding Chromium for Playwright: explicit path, env override, Playwright's own, the system's."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from common import browser


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


def test_sandbox_off_means_no_sandbox_flag(tmp_path):
    plan = browser.sandbox_plan(Path("/usr/bin/chromium"), tmp_path, "off")
    assert not plan.sandbox and plan.args == ("--no-sandbox",) and "off" in plan.why
    with pytest.raises(ValueError, match="sandbox='maybe'"):
        browser.sandbox_plan(Path("/usr/bin/chromium"), tmp_path, "maybe")


def test_non_root_uses_chromiums_own_sandbox(monkeypatch, tmp_path):
    monkeypatch.setattr(browser.os, "geteuid", lambda: 1000)
    plan = browser.sandbox_plan(Path("/usr/bin/chromium"), tmp_path)
    assert plan.sandbox and plan.executable == Path("/usr/bin/chromium") and plan.args == ()


def test_root_runs_chromium_as_nobody_through_a_generated_launcher(monkeypatch, tmp_path):
    monkeypatch.setattr(browser.os, "geteuid", lambda: 0)
    monkeypatch.setattr(browser.shutil, "which", lambda name: "/usr/bin/setpriv")
    monkeypatch.setattr(browser.pwd, "getpwnam", lambda name: pwd_entry(name, 65534, 65534))
    plan = browser.sandbox_plan(Path("/opt/chrome dir/chrome"), tmp_path)
    assert plan.sandbox and plan.executable.parent == tmp_path and "--no-sandbox" not in plan.args
    script = plan.executable.read_text()
    assert "--reuid=65534 --regid=65534 --clear-groups" in script
    assert "'/opt/chrome dir/chrome'" in script  # quoted for the shell
    assert 'chown -R 65534:65534 "$dir"' in script
    assert os.access(plan.executable, os.X_OK)


def test_root_without_a_way_to_drop_privileges_falls_back_and_says_why(monkeypatch, tmp_path):
    monkeypatch.setattr(browser.os, "geteuid", lambda: 0)

    def missing(name):
        raise KeyError(name)

    monkeypatch.setattr(browser.pwd, "getpwnam", missing)
    plan = browser.sandbox_plan(Path("/usr/bin/chromium"), tmp_path)
    assert not plan.sandbox and "--no-sandbox" in plan.args and "'nobody'" in plan.why
    with pytest.raises(RuntimeError, match="sandbox impossible"):
        browser.sandbox_plan(Path("/usr/bin/chromium"), tmp_path, "on")


def test_failed_sandboxed_launch_falls_back_and_logs_once(monkeypatch, tmp_path, caplog):
    from crawlers.render import RenderConfig, RenderJob, render_pages, session

    broken = tmp_path / "broken-chromium"
    broken.write_text("#!/bin/sh\necho 'no user namespaces here' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setattr(
        session,
        "sandbox_plan",
        lambda chromium, workdir, mode: browser.LaunchPlan(broken, True, "test launcher"),
    )
    monkeypatch.setattr(browser, "_logged", set())
    cfg = RenderConfig(pages_in_flight=1, delay=0.0, settle_max_ms=500)
    job = RenderJob("http://127.0.0.89:9/x", "<html><body><p>fallback works</p></body></html>")
    with caplog.at_level(logging.INFO, logger="common.browser"):
        for _ in range(2):
            (out,) = render_pages([job], cfg)
            assert out.error is None and "fallback works" in out.html
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "WITHOUT its sandbox" in warnings[0]
    assert "sandboxed launch failed" in warnings[0]


def pwd_entry(name: str, uid: int, gid: int):
    import pwd

    return pwd.struct_passwd((name, "x", uid, gid, name, "/nonexistent", "/usr/sbin/nologin"))
