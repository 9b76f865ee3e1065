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

    def image(self, site: str, domain: str | None = None, matches: bool = True) -> dict:
        """Draw a scene with a web-wide unique true alt text, register its PNG, return its label."""
        while True:
            scene: Scene = random_scene(self.rng, domain)
            if scene.alt() not in self.used_alts:
                break
        self.used_alts.add(scene.alt())
        n = self.image_counter.get(site, 0) + 1
        self.image_counter[site] = n
        src = f"/img/{site}-{n:03d}.png"
        alt = scene.alt() if matches else wrong_alt(scene, self.rng)
        label = {
            "src": src,
            "alt": alt,
            "alt_matches": matches,
            "scene": scene.spec(),
            "domain": domain,
            "width": scene.width,
            "height": scene.height,
        }
        self.add(
            site,
            src,
            render_png(scene),
            content_type="image/png",
            page_type="image",
            images=[label],
        )
        return label
