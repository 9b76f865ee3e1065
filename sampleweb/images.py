"""Deterministic PNG scenes from a small grammar (count x colour x shape at a position) and their alt texts."""

from __future__ import annotations

import functools
import io
import random
from dataclasses import dataclass

from PIL import Image, ImageDraw

COLOURS = {
    "red": (214, 40, 40),
    "blue": (40, 90, 214),
    "green": (40, 160, 70),
    "yellow": (235, 200, 30),
    "purple": (130, 60, 180),
    "orange": (240, 130, 20),
    "black": (20, 20, 20),
    "white": (245, 245, 245),
}
SHAPES = ("circle", "square", "triangle", "star")
OBJECTS = ("apple", "car", "house", "tree", "cat")
POSITIONS = ("left", "right", "top", "bottom", "center")
NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
PLURALS = {
    "circle": "circles",
    "square": "squares",
    "triangle": "triangles",
    "star": "stars",
    "apple": "apples",
    "car": "cars",
    "house": "houses",
    "tree": "trees",
    "cat": "cats",
}
POSITION_PHRASES = {
    "left": "on the left",
    "right": "on the right",
    "top": "at the top",
    "bottom": "at the bottom",
    "center": "in the center",
}
# Alt prefixes that put an image in a domain the multimodal filters look for.
DOMAIN_PREFIXES = {"science": "microscope slide of", "medical": "x-ray of", "food": "plate of"}
GENERIC_ALTS = ("click here", "image", "photo", "IMG_0423.png", "banner")


@dataclass(frozen=True)
class Group:
    """`count` things of one colour and shape (or object category) placed at one position."""

    count: int
    colour: str
    thing: str
    position: str

    def phrase(self) -> str:
        """English noun phrase: 'two red circles on the left'."""
        noun = self.thing if self.count == 1 else PLURALS[self.thing]
        number = "a" if self.count == 1 else NUMBER_WORDS[self.count]
        return f"{number} {self.colour} {noun} {POSITION_PHRASES[self.position]}"

    def spec(self) -> str:
        """Compact machine-readable form: '2:red:circle@left'."""
        return f"{self.count}:{self.colour}:{self.thing}@{self.position}"


@dataclass(frozen=True)
class Scene:
    """An image: one or two groups on a background, optionally in a domain (science/medical/food)."""

    groups: tuple[Group, ...]
    width: int = 200
    height: int = 150
    domain: str | None = None

    def spec(self) -> str:
        """Compact scene string stored in the labels."""
        body = " + ".join(g.spec() for g in self.groups)
        return f"{self.domain}/{body}" if self.domain else body

    def alt(self) -> str:
        """The alt text that truly describes the scene."""
        text = " and ".join(g.phrase() for g in self.groups)
        return f"{DOMAIN_PREFIXES[self.domain]} {text}" if self.domain else text


def random_scene(rng: random.Random, domain: str | None = None) -> Scene:
    """Draw a scene from the grammar; two groups never share a position."""
    n_groups = 1 if domain or rng.random() < 0.6 else 2
    positions = rng.sample(POSITIONS, n_groups)
    pool = SHAPES + OBJECTS
    if domain == "food":
        pool = ("apple",)
    elif domain in ("science", "medical"):
        pool = ("circle", "square", "triangle")
    colours = [c for c in COLOURS if not (domain == "medical" and c == "black")]
    groups = tuple(
        Group(rng.randint(1, 5), rng.choice(colours), rng.choice(pool), pos) for pos in positions
    )
    width, height = rng.choice([(200, 150), (240, 160), (160, 160), (300, 200)])
    return Scene(groups, width, height, domain)


def wrong_alt(scene: Scene, rng: random.Random) -> str:
    """An alt text that does not match the scene: generic, or a wrong colour or count."""
    mode = rng.choice(["generic", "colour", "count"])
    if mode == "generic":
        return rng.choice(GENERIC_ALTS)
    first = scene.groups[0]
    if mode == "colour":
        colour = rng.choice([c for c in COLOURS if c != first.colour])
        wrong = Group(first.count, colour, first.thing, first.position)
    else:
        count = rng.choice([n for n in NUMBER_WORDS if n != first.count])
        wrong = Group(count, first.colour, first.thing, first.position)
    return Scene((wrong,) + scene.groups[1:], scene.width, scene.height, scene.domain).alt()


def _region(position: str, w: int, h: int) -> tuple[int, int, int, int]:
    third_w, third_h = w // 3, h // 3
    return {
        "left": (0, 0, third_w, h),
        "right": (w - third_w, 0, w, h),
        "top": (0, 0, w, third_h),
        "bottom": (0, h - third_h, w, h),
        "center": (third_w, third_h, w - third_w, h - third_h),
    }[position]


def _slots(region: tuple[int, int, int, int], count: int) -> list[tuple[int, int, int]]:
    """Centres and a radius for `count` objects laid out along the long side of a region."""
    x0, y0, x1, y1 = region
    horizontal = (x1 - x0) >= (y1 - y0)
    span = (x1 - x0) if horizontal else (y1 - y0)
    cross = (y1 - y0) if horizontal else (x1 - x0)
    step = span / count
    radius = int(max(4, min(step, cross) * 0.38))
    out = []
    for i in range(count):
        along = int((i + 0.5) * step)
        if horizontal:
            out.append((x0 + along, (y0 + y1) // 2, radius))
        else:
            out.append(((x0 + x1) // 2, y0 + along, radius))
    return out


def _draw_thing(draw: ImageDraw.ImageDraw, thing: str, cx: int, cy: int, r: int, rgb) -> None:
    outline = (0, 0, 0) if rgb != COLOURS["black"] else (200, 200, 200)
    if thing in ("circle", "apple"):
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=rgb, outline=outline)
        if thing == "apple":  # stem and leaf make an apple read as an apple
            draw.rectangle((cx - 1, cy - r - r // 2, cx + 1, cy - r), fill=(90, 60, 20))
            draw.ellipse((cx + 2, cy - r - r // 2, cx + r // 2, cy - r + 2), fill=(40, 160, 70))
    elif thing == "square":
        draw.rectangle((cx - r, cy - r, cx + r, cy + r), fill=rgb, outline=outline)
    elif thing == "triangle":
        draw.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=rgb, outline=outline)
    elif thing == "star":
        draw.regular_polygon((cx, cy, r), 5, fill=rgb, outline=outline)
        draw.regular_polygon((cx, cy, r), 5, rotation=36, fill=rgb)
    elif thing == "car":
        draw.rectangle((cx - r, cy - r // 3, cx + r, cy + r // 3), fill=rgb, outline=outline)
        draw.rectangle(
            (cx - r // 2, cy - r * 2 // 3, cx + r // 2, cy - r // 3), fill=rgb, outline=outline
        )
        for wx in (cx - r // 2, cx + r // 2):
            draw.ellipse(
                (wx - r // 4, cy + r // 6, wx + r // 4, cy + r * 2 // 3), fill=(30, 30, 30)
            )
    elif thing == "house":
        draw.rectangle(
            (cx - r * 2 // 3, cy - r // 4, cx + r * 2 // 3, cy + r), fill=rgb, outline=outline
        )
        draw.polygon(
            [(cx, cy - r), (cx - r, cy - r // 4), (cx + r, cy - r // 4)], fill=(150, 50, 40)
        )
    elif thing == "tree":
        draw.rectangle((cx - r // 6, cy, cx + r // 6, cy + r), fill=(110, 70, 30))
        draw.ellipse(
            (cx - r * 2 // 3, cy - r, cx + r * 2 // 3, cy + r // 4), fill=rgb, outline=outline
        )
    elif thing == "cat":
        draw.polygon(
            [(cx - r, cy - r // 3), (cx - r // 2, cy - r), (cx - r // 5, cy - r // 2)], fill=rgb
        )
        draw.polygon(
            [(cx + r, cy - r // 3), (cx + r // 2, cy - r), (cx + r // 5, cy - r // 2)], fill=rgb
        )
        draw.ellipse(
            (cx - r * 3 // 4, cy - r * 2 // 3, cx + r * 3 // 4, cy + r * 2 // 3),
            fill=rgb,
            outline=outline,
        )
    else:
        raise ValueError(f"unknown scene thing {thing!r}; known: {SHAPES + OBJECTS}")


def render_png(scene: Scene) -> bytes:
    """Render a scene to PNG bytes; identical scenes give identical bytes."""
    background = {"medical": (15, 15, 20), "science": (236, 228, 246)}.get(
        scene.domain, (250, 250, 245)
    )
    image = Image.new("RGB", (scene.width, scene.height), background)
    draw = ImageDraw.Draw(image)
    if scene.domain == "food":
        draw.ellipse(
            (4, 4, scene.width - 4, scene.height - 4), fill=(255, 255, 255), outline=(180, 180, 180)
        )
    for group in scene.groups:
        rgb = COLOURS[group.colour]
        for cx, cy, r in _slots(_region(group.position, scene.width, scene.height), group.count):
            _draw_thing(draw, group.thing, cx, cy, r, rgb)
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


def _png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


def reencode_jpeg(png: bytes, quality: int = 80) -> bytes:
    """The same picture re-encoded as a baseline JPEG (deterministic for the same input)."""
    with Image.open(io.BytesIO(png)) as im:
        buf = io.BytesIO()
        im.convert("RGB").save(buf, format="JPEG", quality=quality, optimize=False)
    return buf.getvalue()


def resize_png(png: bytes, scale: float) -> tuple[bytes, int, int]:
    """The same picture resized by `scale` (Lanczos), as PNG bytes with its new width and height."""
    with Image.open(io.BytesIO(png)) as im:
        size = (max(1, round(im.width * scale)), max(1, round(im.height * scale)))
        return _png(im.convert("RGB").resize(size, Image.Resampling.LANCZOS)), size[0], size[1]


def solid_png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A one-colour PNG (a spacer, a banner strip)."""
    return _png(Image.new("RGB", (width, height), rgb))


def logo_png(width: int = 120, height: int = 40) -> bytes:
    """The site logo: a dark bar with three coloured squares, the same bytes every time."""
    image = Image.new("RGB", (width, height), (30, 40, 60))
    draw = ImageDraw.Draw(image)
    for i, name in enumerate(("red", "yellow", "blue")):
        x = 8 + i * (height - 8)
        draw.rectangle((x, 8, x + height - 20, height - 8), fill=COLOURS[name])
    return _png(image)


def truncated_png(png: bytes, keep: float = 0.6) -> bytes:
    """The first `keep` share of a PNG's bytes: the header parses, the pixel data ends early."""
    return png[: max(64, int(len(png) * keep))]


@functools.lru_cache(maxsize=2)
def bomb_png(width: int = 20000, height: int = 20000) -> bytes:
    """A valid 1-bit PNG of width x height zero pixels: a few kB on the wire, 400 Mpx decoded
    (above Pillow's decompression-bomb limit, so a safe decoder refuses it from the header)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" * (1 + (width + 7) // 8)  # filter byte 0 + packed 1-bit pixels
    comp = zlib.compressobj(9)
    idat = b"".join(comp.compress(row) for _ in range(height)) + comp.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
