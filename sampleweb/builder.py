"""The mutable state while the sample web is built; the page adders (structure, syndicate,
low-quality pages) and `build` all register pages through it."""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field
from email.utils import formatdate

from .content import LangPool
from .images import Scene, random_scene, render_png, wrong_alt
from .model import Page, Site, default_labels
from .robots import CRAWL_TOKEN, TRAINING_TOKEN, RobotsVariant, is_allowed
from .sites import GZIP_SITES

HTML = "text/html; charset=utf-8"


def last_modified(site: str, path: str) -> str:
    """A fixed, per-page Last-Modified date (deterministic, within 2025)."""
    offset = zlib.crc32(f"{site}{path}".encode()) % (300 * 86400)
    return formatdate(1735689600 + offset, usegmt=True)


@dataclass
class Builder:
    """Mutable state while building: the web being assembled and its seeded RNG."""

    seed: int
    sites: list[Site]
    pools: dict[str, LangPool]
    rng: random.Random
    pages: dict[tuple[str, str], Page] = field(default_factory=dict)
    robots: dict[str, RobotsVariant] = field(default_factory=dict)
    used_alts: set[str] = field(default_factory=set)
    image_counter: dict[str, int] = field(default_factory=dict)

    def site(self, name: str) -> Site:
        """Site by name."""
        return next(s for s in self.sites if s.name == name)

    def add(
        self,
        site: str,
        path: str,
        body: bytes,
        *,
        status: int = 200,
        content_type: str = HTML,
        headers: dict[str, str] | None = None,
        **labels,
    ) -> Page:
        """Register a page; robots expectations are computed here from the site's robots.txt."""
        if (site, path) in self.pages:
            raise ValueError(f"duplicate page {site}{path}")
        lab = default_labels(**labels)
        robots = self.robots[site]
        crawl = is_allowed(robots, CRAWL_TOKEN, path)
        train_robots = is_allowed(robots, TRAINING_TOKEN, path)
        lab["expect_crawl_allowed"] = crawl
        lab["expect_training_allowed"] = crawl and train_robots and not lab["noai"]
        if lab["page_type"] != "image" and lab["images"]:
            lab["images"] = [dict(i, expect_drop=ref_expectation(lab, i)) for i in lab["images"]]
        hdrs = {"Last-Modified": last_modified(site, path)}
        hdrs.update(headers or {})
        page = Page(
            site,
            path,
            status,
            hdrs,
            body,
            content_type,
            lab,
            gzip=site in GZIP_SITES and content_type == HTML,
        )
        self.pages[(site, path)] = page
        return page

    def image(
        self,
        site: str,
        domain: str | None = None,
        matches: bool = True,
        *,
        prefix: str = "/img/",
        headers: dict[str, str] | None = None,
    ) -> dict:
        """Draw a scene with a web-wide unique true alt text, register its PNG, return its label."""
        while True:
            scene: Scene = random_scene(self.rng, domain)
            if scene.alt() not in self.used_alts:
                break
        self.used_alts.add(scene.alt())
        n = self.image_counter.get(site, 0) + 1
        self.image_counter[site] = n
        alt = scene.alt() if matches else wrong_alt(scene, self.rng)
        return self.asset(
            site,
            f"{prefix}{site}-{n:03d}.png",
            render_png(scene),
            alt=alt,
            kind="scene",
            width=scene.width,
            height=scene.height,
            alt_matches=matches,
            scene=scene.spec(),
            domain=domain,
            headers=headers,
        )

    def asset(
        self,
        site: str,
        src: str,
        body: bytes,
        *,
        alt: str,
        kind: str,
        width: int,
        height: int,
        alt_matches: bool = False,
        scene: str | None = None,
        domain: str | None = None,
        copy_of: str | None = None,
        headers: dict[str, str] | None = None,
        content_type: str = "image/png",
        fetch_drop: str | None = None,
    ) -> dict:
        """Register an image resource (once per src) and return its label.

        `expect_drop` is the image fetch's expected drop reason for this image on its own (robots
        for either token, X-Robots-Tag, then `fetch_drop`: what decoding it should give); a page
        that embeds it may override it (`ref_expectation`)."""
        label = {
            "src": src,
            "alt": alt,
            "alt_matches": alt_matches,
            "scene": scene,
            "domain": domain,
            "width": width,
            "height": height,
            "kind": kind,
            "copy_of": copy_of,
            "expect_drop": self.image_drop(site, src, headers or {}) or fetch_drop,
        }
        if (site, src) not in self.pages:
            self.add(
                site,
                src,
                body,
                content_type=content_type,
                headers=headers,
                page_type="image",
                images=[label],
            )
        return label

    def image_drop(self, site: str, src: str, headers: dict[str, str]) -> str | None:
        """The drop reason robots.txt or the image's X-Robots-Tag gives (None: fetched)."""
        robots = self.robots[site]
        if not is_allowed(robots, CRAWL_TOKEN, src):
            return "robots_denied"
        if not is_allowed(robots, TRAINING_TOKEN, src):
            return "training_opt_out"
        if xrt_applies(headers.get("X-Robots-Tag", "")):
            return "noai"
        return None


def xrt_applies(value: str) -> bool:
    """Whether an X-Robots-Tag value opts our agents out of AI use ('noai'/'noimageai', unscoped
    or scoped to our crawl or training token)."""
    scope, _, words = value.rpartition(":")
    if scope.strip() and scope.strip().lower() not in (CRAWL_TOKEN.lower(), TRAINING_TOKEN.lower()):
        return False
    return bool({w.strip().lower() for w in words.split(",")} & {"noai", "noimageai"})


def ref_expectation(page: dict, image: dict) -> str | None:
    """Expected drop reason of one image ref of a page: the page's own opt-out first (`noai` or
    `noimageai`, then its training flag), else the image's own (`image["expect_drop"]`)."""
    if page["noai"] or page["noimageai"]:
        return "noai"
    if not page["expect_training_allowed"]:
        return "training_opt_out"
    return image.get("expect_drop")
