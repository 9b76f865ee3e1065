"""Find a Chromium that Playwright can drive: Playwright's own browser first, then the system one.

`python -m crawlers.browser` prints the path and exits 0, or exits 1 if none is found.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

SYSTEM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# Flags that keep Chromium quiet on a machine with no network beyond loopback.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


def playwright_bundled_chromium() -> Path | None:
    """Playwright's downloaded Chromium, if `playwright install chromium` ever ran."""
    base = Path(os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or Path.home() / ".cache/ms-playwright")
    if not base.is_dir():
        return None
    for pattern in ("chromium-*/chrome-linux*/chrome", "chromium_headless_shell-*/chrome-*/headless_shell"):
        for hit in sorted(base.glob(pattern), reverse=True):
            if os.access(hit, os.X_OK):
                return hit
    return None


def find_chromium(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Return the Chromium to launch: explicit path, $REFINERY_CHROMIUM, Playwright's, or the system's."""
    for candidate in (explicit, os.environ.get("REFINERY_CHROMIUM")):
        if candidate:
            path = Path(candidate)
            if not os.access(path, os.X_OK):
                raise FileNotFoundError(f"Chromium at {path} is not an executable file; fix the path")
            return path
    bundled = playwright_bundled_chromium()
    if bundled:
        return bundled
    for name in SYSTEM_CANDIDATES:
        found = shutil.which(name)
        if found:
            return Path(found)
    raise FileNotFoundError(
        "no Chromium found: run `playwright install chromium`, or install your distribution's "
        "chromium package, or set REFINERY_CHROMIUM to its path"
    )


if __name__ == "__main__":
    try:
        print(find_chromium())
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
