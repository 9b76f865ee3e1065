"""Find a Chromium that Playwright can drive, and decide how it runs with its sandbox.

`python -m common.browser` prints the path and exits 0, or exits 1 if none is found.

Sandbox: Chromium refuses its sandbox as root ("Running as root without --no-sandbox is not
supported"), and `--no-zygote` needs `--no-sandbox` too. As root, `sandbox_plan` therefore
starts Chromium through a small generated launcher that drops to an unprivileged user (`nobody`)
with `setpriv`; Chromium's user-namespace sandbox (or its setuid helper) then works as for any
user. Where that is impossible (no such user, no setpriv, or the launch fails, e.g. a container
that forbids user namespaces), the renderer falls back to `--no-sandbox` and logs why, once.
"""

from __future__ import annotations

import logging
import os
import pwd
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("common.browser")

# The browser's only network is the refusing proxy and Playwright's routing, both TCP. WebRTC
# (STUN/TURN, ICE candidates) and QUIC would send UDP around them: WebRTC may use no UDP that
# does not go through the proxy (so none; the switch is --webrtc-ip-handling-policy in current
# Chromium, --force-webrtc-ip-handling-policy in older builds), and no QUIC.
# The renderer also removes the WebRTC constructors from every page (render.session.NO_WEBRTC).
NO_UDP_ARGS = [
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--disable-quic",
]

SYSTEM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# Flags that keep Chromium quiet on a machine with no network beyond loopback. `--no-sandbox` is
# not among them: `sandbox_plan` adds it only where the sandbox cannot run.
CHROMIUM_ARGS = [
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    *NO_UDP_ARGS,
]


def playwright_bundled_chromium() -> Path | None:
    """Playwright's downloaded Chromium, if `playwright install chromium` ever ran."""
    base = Path(os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or Path.home() / ".cache/ms-playwright")
    if not base.is_dir():
        return None
    for pattern in (
        "chromium-*/chrome-linux*/chrome",
        "chromium_headless_shell-*/chrome-*/headless_shell",
    ):
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
                raise FileNotFoundError(
                    f"Chromium at {path} is not an executable file; fix the path"
                )
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


SANDBOX_MODES = ("auto", "on", "off")
SANDBOX_USER = "nobody"

_LAUNCHER = """#!/bin/sh
# Written by common.browser: run Chromium as an unprivileged user so its sandbox can start.
dir=""
for arg in "$@"; do
  case "$arg" in --user-data-dir=*) dir="${arg#--user-data-dir=}" ;; esac
done
if [ -n "$dir" ]; then
  chown -R @UID@:@GID@ "$dir" || exit 71
  export HOME="$dir" XDG_CONFIG_HOME="$dir" XDG_CACHE_HOME="$dir"
fi
exec @SETPRIV@ --reuid=@UID@ --regid=@GID@ --clear-groups -- @CHROMIUM@ "$@"
"""


@dataclass
class LaunchPlan:
    """How to start Chromium: the executable Playwright launches, sandbox on/off, and why."""

    executable: Path
    sandbox: bool
    why: str
    args: tuple[str, ...] = ()


def no_sandbox_plan(chromium: Path, why: str) -> LaunchPlan:
    """Chromium as is, with --no-sandbox."""
    return LaunchPlan(Path(chromium), False, why, ("--no-sandbox",))


def sandbox_plan(chromium: Path, workdir: Path, mode: str = "auto") -> LaunchPlan:
    """Decide how Chromium gets its sandbox here; `workdir` holds a generated launcher if needed.

    mode 'on' raises RuntimeError (naming the fix) where the sandbox is impossible; 'off' never
    sandboxes; 'auto' sandboxes where it can.
    """
    if mode not in SANDBOX_MODES:
        raise ValueError(f"sandbox={mode!r}: choose one of {', '.join(SANDBOX_MODES)}")
    if mode == "off":
        return no_sandbox_plan(chromium, "sandbox turned off (sandbox='off')")
    if os.geteuid() != 0:
        return LaunchPlan(Path(chromium), True, "Chromium's own sandbox (not running as root)")
    problem = None
    setpriv = shutil.which("setpriv")
    try:
        user = pwd.getpwnam(SANDBOX_USER)
    except KeyError:
        user = None
    if user is None or user.pw_uid == 0:
        problem = (
            f"running as root and there is no unprivileged {SANDBOX_USER!r} user to run Chromium as"
        )
    elif setpriv is None:
        problem = "running as root and setpriv (util-linux) is not installed to drop privileges"
    if problem:
        if mode == "on":
            raise RuntimeError(f"Chromium sandbox impossible: {problem}; run as a non-root user")
        return no_sandbox_plan(chromium, problem)
    launcher = Path(workdir) / "chromium-as-nobody.sh"
    script = _LAUNCHER.replace("@UID@", str(user.pw_uid)).replace("@GID@", str(user.pw_gid))
    script = script.replace("@SETPRIV@", shlex.quote(setpriv))
    launcher.write_text(script.replace("@CHROMIUM@", shlex.quote(str(chromium))))
    launcher.chmod(0o755)
    why = f"running as root: Chromium runs as {SANDBOX_USER} (uid {user.pw_uid}) inside its sandbox"
    return LaunchPlan(launcher, True, why)


_logged: set[str] = set()


def launch_kwargs(plan: LaunchPlan, **extra) -> dict:
    """Playwright's `chromium.launch` arguments for a plan (headless, the quiet flags)."""
    return dict(
        executable_path=str(plan.executable),
        args=[*CHROMIUM_ARGS, *plan.args],
        chromium_sandbox=plan.sandbox,
        headless=True,
        **extra,
    )


def fallback_plan(chromium: Path, mode: str, plan: LaunchPlan, exc: BaseException) -> LaunchPlan:
    """The plan after a launch with `plan` failed: no sandbox, saying why; re-raises `exc` when
    the plan had no sandbox to drop or the sandbox was required (mode 'on')."""
    if not plan.sandbox or mode == "on":
        raise exc
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return no_sandbox_plan(chromium, f"sandboxed launch failed ({first[:200]})")


def log_once(level: int, message: str) -> None:
    """Log a message the first time it is seen in this process."""
    if message not in _logged:
        _logged.add(message)
        log.log(level, message)


if __name__ == "__main__":
    try:
        print(find_chromium())
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
