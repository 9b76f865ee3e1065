"""OCR of text-rich images (crawlers/images/ocr.py) against plain Tesseract, side by side: the
character error rate per script and variant, and the cost per image.

    .venv/bin/python bench/ocr.py [--seeds N] [--rapidocr] [--real DIR]

Images (tests/images/ocr_render.py): Latin, Chinese, Arabic, Japanese, Korean, Cyrillic
(Russian) and Greek lines rendered upright, skewed
7 and 30 degrees, on their side (90), upside down (180), turned 120, grey on grey, on a blotchy
background, light on a dark ground, blurred (Gaussian, radius 1.5), speckled (salt and
pepper, 4% of the pixels) and on a gradient (the ground darkened by up to 55% towards the left);
seed 0 draws the script's three lines, other seeds two of them in a random order.

--real DIR adds real scans nobody here rendered, read at run time and never committed: the
pages of tesseract-ocr/test's testing/ folder that come with their true text (phototest.tif and
four copies of it: turned left and right, turned in an RGBA TIFF, re-scanned at 1017x529, all
against phototest.txt; eurotext.tif, six languages in Latin script; 8087_054.3B.tif and
8071_093.3B.tif, 300 dpi journal pages), e.g. from the `fetch` tool's mirror of
tesseract-ocr/test (`git --git-dir=... show HEAD:testing/<file>`); plain Tesseract is told eng.

--lingua DIR adds pages of real sentences nobody here wrote, in fonts, sizes and layouts unlike
the renderer's own: lingua-py's test sentences (DIR holds its language-testdata/sentences/
<lang>.txt files, e.g. `git --git-dir=... archive HEAD language-testdata/sentences | tar -x`)
in 15 languages (English, German, French, Spanish, Polish, Turkish, Vietnamese, Russian,
Ukrainian, Greek, Arabic, Persian, Chinese, Japanese, Korean), two sentences a page, set in
DejaVu Sans or Serif, Liberation Serif or Mono, Amiri or WenQuanYi at 14, 22 and 40 px with
1.6 sizes between lines, upright, on its side, skewed 12 degrees and faint (grey on grey);
--lingua-seeds N draws N such sets (348 pages each). Plain Tesseract is told eng, Latin, vie,
Cyrillic, Greek, ara, chi_sim, jpn or kor. --lingua-large adds 80 pages of large text (banners,
headlines): two lines of English, German, Russian, Greek, Arabic, Chinese, Japanese or Korean
sentences, upright, at 36, 44, 56, 64 and 80 px.

--short adds 240 pages of short phrases, one line each, as a test writer draws them (black on
white with a margin of the font size): "Hello World", a pangram, 你好，世界, 欢迎光临本店,
欢迎来到公共图书馆, مرحبا بالعالم (DejaVu Sans) and السلام عليكم (Amiri), こんにちは世界,
안녕하세요 세계 and Привет мир, at 24, 32, 48 and 64 px, plain, turned 15, 90 and 180 degrees
(Pillow's bicubic rotate), faint (grey on grey) and light on dark. OSD places little on one
short line, and Tesseract's page layout finds no text block in some of them at all.

Plain Tesseract is the `tesseract` program of Debian's tesseract-ocr with its defaults (page
segmentation 3), told the script's language (`-l eng|chi_sim|ara|jpn|kor|Cyrillic|Greek`: an
oracle the engine is not given: it finds the script itself). Refinery's engine is `OcrEngine().read(image)`: contrast,
orientation, skew and script handled around the same Tesseract. CER: edit distance over the
truth's characters, white space ignored, reading order counted (lines out of order are errors).
--rapidocr adds RapidOCR (rapidocr-onnxruntime: PaddleOCR's PP-OCRv4 Chinese+English models in
ONNX, shipped in the wheel), the ONNX engine that was weighed against Tesseract; it is not a
project dependency (it needs opencv-python, which clashes with the project's headless OpenCV), so
install it apart: `pip install --target /tmp/rapidocr rapidocr-onnxruntime` and run with
PYTHONPATH=/tmp/rapidocr. Cost: CPU milliseconds per image (the engine: this process's CPU time; the program: its
children's CPU time), so a loaded machine does not inflate it. See RESULTS at the end of this file.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crawlers.images.ocr import OcrEngine  # noqa: E402
from tests.images.ocr_render import (  # noqa: E402
    TESSERACT_LANG,
    TEXTS,
    VARIANTS,
    char_error_rate,
    sample,
)


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def plain_tesseract(image, lang: str, tmp: Path) -> tuple[str, float]:
    """(text, CPU seconds) of the `tesseract` program on the image, told its language."""
    path = tmp / "page.png"
    image.save(path)
    before = _children_cpu()
    out = subprocess.run(
        ["tesseract", str(path), "stdout", "-l", lang],
        capture_output=True,
        check=True,
        env={**os.environ, "OMP_THREAD_LIMIT": "1"},
    ).stdout.decode("utf-8", "replace")
    return out, _children_cpu() - before


def ours(engine: OcrEngine, image) -> tuple[str, float]:
    """(text, CPU seconds) of Refinery's engine."""
    before = time.process_time()
    text = engine.read(image).text
    return text, time.process_time() - before


class RapidOcr:
    """RapidOCR's default pipeline (detection, angle classifier, recognition), lines in its order."""

    def __init__(self):
        from rapidocr_onnxruntime import RapidOCR

        self.engine = RapidOCR()

    def __call__(self, image) -> tuple[str, float]:
        import numpy as np

        before = time.process_time()
        found, _ = self.engine(np.asarray(image.convert("RGB")))
        text = "\n".join(line[1] for line in found or [])
        return text, time.process_time() - before


REAL = (  # (image, its true text) in tesseract-ocr/test's testing/ folder
    ("phototest.tif", "phototest.txt"),
    ("phototest-rotated-L.png", "phototest.txt"),
    ("phototest-rotated-R.png", "phototest.txt"),
    ("phototestrot.tif", "phototest.txt"),
    ("phototest_2.tif", "phototest.txt"),
    ("eurotext.tif", "eurotext.txt"),
    ("8087_054.3B.tif", "8087_054.3B.txt"),
    ("8071_093.3B.tif", "8071_093.3B.txt"),
)


def real_pages(engine: OcrEngine, folder: Path, tmp: Path) -> dict:
    """CER and CPU of both on the real scans of --real (see the module docstring)."""
    from PIL import Image

    rows = {}
    print(f"\nreal scans ({folder}): CER tesseract / refinery, CPU ms")
    for image_name, truth_name in REAL:
        truth = (folder / truth_name).read_text(encoding="utf-8")
        with Image.open(folder / image_name) as im:
            im.load()
            p_text, p_cpu = plain_tesseract(im, "eng", tmp)
            o_text, o_cpu = ours(engine, im)
        row = {
            "tesseract": round(char_error_rate(truth, p_text), 4),
            "refinery": round(char_error_rate(truth, o_text), 4),
            "tesseract_ms": round(1000 * p_cpu),
            "refinery_ms": round(1000 * o_cpu),
        }
        rows[image_name] = row
        print(
            f"  {image_name:24} {row['tesseract']:6.3f} {row['refinery']:6.3f}   "
            f"{row['tesseract_ms']:5d} {row['refinery_ms']:5d}"
        )
    n = len(rows)
    for tool in ("tesseract", "refinery"):
        print(f"  mean {tool}: CER {sum(r[tool] for r in rows.values()) / n:.3f}")
    return rows


# --lingua: language -> (plain Tesseract's language, the fonts its pages are set in)
_D = "/usr/share/fonts/truetype/"
LINGUA_FONTS = {
    "sans": _D + "dejavu/DejaVuSans.ttf",
    "serif": _D + "dejavu/DejaVuSerif.ttf",
    "lserif": _D + "liberation/LiberationSerif-Regular.ttf",
    "mono": _D + "liberation/LiberationMono-Regular.ttf",
    "wqy": _D + "wqy/wqy-microhei.ttc",
    "amiri": "/usr/share/fonts/opentype/fonts-hosny-amiri/Amiri-Regular.ttf",
}
LINGUA = {
    "en": ("eng", ("sans", "serif", "lserif", "mono")),
    "de": ("Latin", ("serif", "lserif")),
    "fr": ("Latin", ("sans", "lserif")),
    "es": ("Latin", ("mono", "serif")),
    "pl": ("Latin", ("sans", "lserif")),
    "tr": ("Latin", ("serif", "sans")),
    "vi": ("vie", ("sans", "lserif")),
    "ru": ("Cyrillic", ("serif", "lserif")),
    "uk": ("Cyrillic", ("sans", "mono")),
    "el": ("Greek", ("serif", "lserif")),
    "ar": ("ara", ("amiri", "sans")),
    "fa": ("ara", ("amiri", "sans")),
    "zh": ("chi_sim", ("wqy",)),
    "ja": ("jpn", ("wqy",)),
    "ko": ("kor", ("wqy",)),
}
LINGUA_VARIANTS = {
    "upright": {},
    "rot90": {"angle": 90},
    "skew12": {"angle": 12},
    "faint": {"fg": (120, 120, 120), "bg": (165, 165, 165)},
}


def _lingua_sentences(folder: Path, lang: str) -> list[str]:
    text = (folder / f"{lang}.txt").read_text(encoding="utf-8")
    return [x for x in text.splitlines() if 20 < len(x) < 90]


def _lingua_items(folder: Path, seeds: int):
    """(lang, variant, size, plain Tesseract's language, image, truth) of --lingua's pages."""
    import random

    from tests.images.ocr_render import render

    for seed in range(seeds):
        rng = random.Random(seed)
        for lang, (plain_lang, fonts) in LINGUA.items():
            sentences = _lingua_sentences(folder, lang)
            for font in fonts:
                for size in (14, 22, 40):
                    for variant, how in LINGUA_VARIANTS.items():
                        lines = rng.sample(sentences, 2)
                        if lang in ("zh", "ja", "ko"):
                            lines = [x[:22] for x in lines]
                        elif size == 40:
                            lines = [x[:45] for x in lines]
                        script = "arabic" if lang in ("ar", "fa") else "latin"
                        image = render(
                            lines, script, size=size, font=LINGUA_FONTS[font], leading=1.6, **how
                        )
                        yield lang, variant, size, plain_lang, image, "\n".join(lines)


# --lingua-large: large text (banners, headlines), upright, in these languages
LINGUA_LARGE = ("en", "de", "ru", "el", "ar", "zh", "ja", "ko")
LINGUA_LARGE_SIZES = (36, 44, 56, 64, 80)


def _lingua_large_items(folder: Path):
    """--lingua-large's pages: two lines of 12 (Chinese, Japanese, Korean) or 24 characters,
    each language in two of its fonts where it has two, at each of LINGUA_LARGE_SIZES, twice."""
    import random

    from tests.images.ocr_render import render

    rng = random.Random(7)
    for lang in LINGUA_LARGE:
        plain_lang, fonts = LINGUA[lang]
        sentences = _lingua_sentences(folder, lang)
        script = "arabic" if lang in ("ar", "fa") else "latin"
        for size in LINGUA_LARGE_SIZES:
            for k in range(2):
                n = 12 if lang in ("zh", "ja", "ko") else 24
                lines = [x[:n] for x in rng.sample(sentences, 2)]
                font = LINGUA_FONTS[fonts[k % len(fonts)]]
                image = render(lines, script, size=size, font=font, leading=1.6)
                yield lang, "large", size, plain_lang, image, "\n".join(lines)


# --short: phrases a test writer renders, one line each, in the fonts this machine has
_D = "/usr/share/fonts/truetype/"
SHORT = [
    ("en", "Hello World", "latin", "eng"),
    ("en", "The quick brown fox jumps over the lazy dog", "latin", "eng"),
    ("zh", "你好，世界", "cjk", "chi_sim"),
    ("zh", "欢迎光临本店", "cjk", "chi_sim"),
    ("zh", "欢迎来到公共图书馆", "cjk", "chi_sim"),
    ("ar", "مرحبا بالعالم", "latin", "ara"),  # DejaVu Sans, which has Arabic
    ("ar", "السلام عليكم", "arabic", "ara"),  # Amiri
    ("ja", "こんにちは世界", "japanese", "jpn"),
    ("ko", "안녕하세요 세계", "korean", "kor"),
    ("ru", "Привет мир", "latin", "Cyrillic"),
]
SHORT_SIZES = (24, 32, 48, 64)
SHORT_VARIANTS = {
    "plain": {},
    "rot15": {"angle": 15},
    "rot90": {"angle": 90},
    "rot180": {"angle": 180},
    "faint": {"fg": (150, 150, 150), "bg": (190, 190, 190)},
    "dark": {"fg": (240, 240, 240), "bg": (30, 30, 60)},
}


def _short_items():
    """--short's pages: each phrase of SHORT drawn as one line (a margin of its size, black on
    white unless the variant says), at each size, in each variant (turned by Pillow's bicubic
    rotate): 240 pages."""
    from PIL import Image, ImageDraw, ImageFont

    from tests.images.ocr_render import FONTS

    for lang, text, font, plain_lang in SHORT:
        for size in SHORT_SIZES:
            face = ImageFont.truetype(FONTS[font], size)
            width = int(face.getlength(text)) + 2 * size
            for variant, how in SHORT_VARIANTS.items():
                bg, fg = how.get("bg", (255, 255, 255)), how.get("fg", (0, 0, 0))
                image = Image.new("RGB", (width, 3 * size), bg)
                ImageDraw.Draw(image).text((size, size), text, font=face, fill=fg)
                if "angle" in how:
                    image = image.rotate(
                        how["angle"], Image.Resampling.BICUBIC, expand=True, fillcolor=bg
                    )
                yield lang, variant, size, plain_lang, image, text


def lingua_pages(
    engine: OcrEngine,
    folder: Path | None,
    tmp: Path,
    seeds: int,
    large: bool = False,
    short: bool = False,
) -> dict:
    """CER and CPU of both on lingua-py's sentences (see the module docstring), by language,
    variant and size; `large`: --lingua-large's pages instead; `short`: --short's phrases."""
    if short:
        items = _short_items()
    else:
        items = _lingua_large_items(folder) if large else _lingua_items(folder, seeds)
    rows = []
    for lang, variant, size, plain_lang, image, truth in items:
        p_text, p_cpu = plain_tesseract(image, plain_lang, tmp)
        o_text, o_cpu = ours(engine, image)
        rows.append(
            {
                "lang": lang,
                "variant": variant,
                "size": size,
                "tesseract": char_error_rate(truth, p_text),
                "refinery": char_error_rate(truth, o_text),
                "tesseract_ms": 1000 * p_cpu,
                "refinery_ms": 1000 * o_cpu,
            }
        )
    out: dict = {"pages": len(rows)}
    if not rows:
        return out
    what = (
        "short phrases, one line"
        if short
        else f"lingua-py sentences ({'large text, ' * large}{folder})"
    )
    print(f"\n{what}, {len(rows)} pages: CER tesseract / refinery")
    for key in ("lang", "variant", "size"):
        groups: dict = defaultdict(list)
        for row in rows:
            groups[row[key]].append(row)
        out[key] = {}
        for name, group in groups.items():
            cell = {
                t: round(sum(r[t] for r in group) / len(group), 4)
                for t in ("tesseract", "refinery")
            }
            out[key][str(name)] = cell
            print(f"  {key} {name!s:8} {cell['tesseract']:6.3f} {cell['refinery']:6.3f}")
    n = len(rows)
    out["all"] = {t: round(sum(r[t] for r in rows) / n, 4) for t in ("tesseract", "refinery")}
    out["cpu_ms"] = {
        t: round(sum(r[f"{t}_ms"] for r in rows) / n) for t in ("tesseract", "refinery")
    }
    print(
        f"  all {out['all']['tesseract']:.4f} {out['all']['refinery']:.4f}; CPU ms a page "
        f"{out['cpu_ms']['tesseract']} / {out['cpu_ms']['refinery']}"
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=2, help="images per script and variant")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "ocr.json")
    ap.add_argument("--rapidocr", action="store_true", help="add RapidOCR (installed apart)")
    ap.add_argument("--real", type=Path, default=None, help="tesseract-ocr/test's testing/ folder")
    ap.add_argument(
        "--lingua", type=Path, default=None, help="lingua-py's language-testdata/sentences folder"
    )
    ap.add_argument("--lingua-seeds", type=int, default=1, help="sets of 348 lingua-py pages")
    ap.add_argument(
        "--lingua-large",
        action="store_true",
        help="with --lingua: 80 pages of large text (36-80 px, 8 languages) too",
    )
    ap.add_argument(
        "--short",
        action="store_true",
        help="240 pages of short phrases, one line each (10 phrases in 7 languages, 4 sizes, "
        "6 variants)",
    )
    args = ap.parse_args()
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")  # one core each, engine and program alike
    engine = OcrEngine()
    rapid = RapidOcr() if args.rapidocr else None
    cer: dict = defaultdict(lambda: defaultdict(list))
    cpu: dict = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        plain_tesseract(sample("latin", "upright")[0], "eng", Path(tmp))  # warm both
        ours(engine, sample("latin", "upright")[0])
        for script in TEXTS:
            for variant in VARIANTS:
                for seed in range(args.seeds):
                    image, truth = sample(script, variant, seed)
                    buf = io.BytesIO()
                    image.save(buf, format="PNG")
                    p_text, p_cpu = plain_tesseract(image, TESSERACT_LANG[script], Path(tmp))
                    o_text, o_cpu = ours(engine, image)
                    cer[(script, variant)]["tesseract"].append(char_error_rate(truth, p_text))
                    cer[(script, variant)]["refinery"].append(char_error_rate(truth, o_text))
                    cpu["tesseract"].append(p_cpu)
                    cpu["refinery"].append(o_cpu)
                    if rapid is not None:
                        r_text, r_cpu = rapid(image)
                        cer[(script, variant)]["rapidocr"].append(char_error_rate(truth, r_text))
                        cpu["rapidocr"].append(r_cpu)
        real = real_pages(engine, args.real, Path(tmp)) if args.real else None
        lingua = (
            lingua_pages(engine, args.lingua, Path(tmp), args.lingua_seeds) if args.lingua else None
        )
        lingua_large = (
            lingua_pages(engine, args.lingua, Path(tmp), 0, large=True)
            if args.lingua and args.lingua_large
            else None
        )
        short = lingua_pages(engine, None, Path(tmp), 0, short=True) if args.short else None

    def mean(xs):
        return sum(xs) / len(xs) if xs else 0.0  # --seeds 0: no rendered pages

    tools = ["tesseract", "refinery", *(["rapidocr"] if rapid else [])]
    print(f"{'script':8} {'variant':13} " + " ".join(f"{t:>9}" for t in tools))
    per_script: dict = defaultdict(lambda: defaultdict(list))
    for (script, variant), by in cer.items():
        print(f"{script:8} {variant:13} " + " ".join(f"{mean(by[t]):9.3f}" for t in tools))
        for tool, xs in by.items():
            per_script[script][tool] += xs
            per_script["all"][tool] += xs
    print("\nCER per script (mean over variants and seeds); ratio: refinery / tesseract")
    print(f"{'script':8} " + " ".join(f"{t:>9}" for t in tools) + f" {'ratio':>7}")
    summary = {}
    for script, by in per_script.items():
        summary[script] = {t: round(mean(by[t]), 4) for t in tools}
        t, r = mean(by["tesseract"]), mean(by["refinery"])
        cells = " ".join(f"{mean(by[x]):9.3f}" for x in tools)
        print(f"{script:8} {cells} {r / t if t else float('nan'):7.2f}")
    ms = {t: 1000 * mean(cpu[t]) for t in tools}
    print(
        "\nCPU ms per image: "
        + "  ".join(f"{t} {v:.0f}" for t, v in ms.items())
        + f"  ratio refinery/tesseract {ms['refinery'] / (ms['tesseract'] or 1):.2f}"
    )
    result = {
        "images": len(cpu["refinery"]),
        "cer": summary,
        "cer_by_variant": {
            f"{s}/{v}": {k: round(mean(x), 4) for k, x in by.items()} for (s, v), by in cer.items()
        },
        "cpu_ms_per_image": {t: round(v) for t, v in ms.items()},
        "tesseract_version": engine.version,
        **({"real": real} if real else {}),
        **({"lingua": lingua} if lingua else {}),
        **({"lingua_large": lingua_large} if lingua_large else {}),
        **({"short": short} if short else {}),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()

# RESULTS
# 2026-11-28, this 2-core machine under a load of 12-14 (CPU time per image, so load does not
# inflate it), Tesseract 5.5.4 (tesserocr 2.13.0 wheel) with Debian's eng/chi_sim/ara/osd data
# (4.1.0), the `tesseract` 5.3.0 program as the plain peer.
#
# --seeds 3 (54 images: 3 scripts x 6 variants x 3):
#   CER          tesseract  refinery   ratio
#   latin            0.423     0.000    0.00
#   cjk              0.460     0.037    0.08
#   arabic           0.313     0.032    0.10
#   all              0.398     0.023    0.06
#   by variant (tesseract / refinery): upright latin 0.000/0.000, cjk 0.033/0.025, arabic
#   0.005/0.019; skew7 0.702/0.000, 0.657/0.067, 0.197/0.089; rot90 0.917/0.000, 1.000/0.025,
#   0.815/0.019; rot180 0.917/0.000, 1.000/0.025, 0.819/0.019; low_contrast 0.000/0.000,
#   0.033/0.033, 0.014/0.005; noisy 0.000/0.000, 0.033/0.047, 0.027/0.039
#   CPU ms per image: tesseract 199, refinery 166 (x0.83: one process, models loaded once)
#
# --seeds 1 --rapidocr (18 images; RapidOCR 1.4.4, onnxruntime 1.32):
#   CER          tesseract  refinery  rapidocr
#   latin            0.430     0.000     0.122   (rapidocr: rot180 0.733, all else 0)
#   cjk              0.404     0.031     0.219   (rapidocr: rot90 0.579, rot180 0.737, else 0)
#   arabic           0.341     0.045     1.000   (its models read Chinese and English only)
#   CPU ms per image: tesseract 189, refinery 195, rapidocr 1546
# Upright, the engine is plain Tesseract (it is Tesseract); what it adds is turned, skewed and
# faded pages and finding the script itself. RapidOCR reads upright and skewed Chinese best
# (0.000 where the engine has 0.053-0.105 on skewed and noisy pages) but no Arabic at all,
# not pages upside down, at 8x the CPU, and needs opencv-python beside the project's headless
# OpenCV: Tesseract through tesserocr is the engine.
#
# Real scans (--real: tesseract-ocr/test's testing/ pages with their true text, read at run time),
# 2026-11-29, `--seeds 1 --real DIR`, CER tesseract / refinery, CPU ms tesseract / refinery:
#   phototest.tif             0.000  0.000     248   343
#   phototest-rotated-L.png   0.938  0.000     249   322   (on its side: OSD turns it)
#   phototest-rotated-R.png   0.000  0.000     247   370   (Tesseract's own OSD-free luck)
#   phototestrot.tif          0.938  0.000     329   291   (RGBA TIFF, on its side)
#   phototest_2.tif           0.000  0.000     404   298
#   eurotext.tif              0.026  0.052     325   451   (one low-confidence word dropped)
#   8087_054.3B.tif           0.075  0.080    2411  2313   (300 dpi journal page)
#   8071_093.3B.tif           0.095  0.049    2122  1880
#   mean CER 0.259 / 0.023. eurotext's difference is the engine's min_word_conf (0.3): the
#   German quotation „schnelle" is read at low confidence and left out (0.029 with it at 0),
#   which keeps garbage out of photographs' readings. Not read by either: testing/arabic.tif, one
#   Arabic word on a blank 600x200 page: Tesseract's automatic layout finds no text line
#   (--psm 6 or 11 reads it). A sparse-text second pass where the layout finds nothing was
#   tried and not kept: it reads the word, but on 30 of bench/images.py's photographs it made
#   26 "with text" against 2 (347 garbage characters) at 5x the CPU (435 against 87 ms).
#
# Session 22: text the engine misread where plain Tesseract did not (a /tmp probe of other fonts,
# sizes, colours, turns and JPEG, and the rendered set at 12-18 px): 14 px Chinese (OSD named it
# Arabic with script confidence 0.0: CER 1.000 -> 0.026), 14 px DejaVu Serif Latin (OSD sure it
# was upside down: 0.857 -> 0.000), 18 px Amiri Arabic (enlarged x1.5: 0.493 -> 0.030) and 14 px
# Amiri Bold (0.400 -> 0.080). Fixed by reading unsure readings again (other languages, other
# turns, unenlarged). `--seeds 3 --real DIR` before and after, in one sitting: every CER above
# unchanged (rendered set and real scans); CPU ms per image 143 -> 168 on the rendered set (the
# extra readings), and on 30 photographs and 30 sample-web scenes 143 -> 147 and 31 -> 33 ms with
# the same readings. Left: 12 px Amiri Arabic (0.388; plain Tesseract 0.149, its first line lost).
#
# Session 23: text turned past 15 degrees was not read at all (a /tmp probe of turns, colours,
# sizes, fonts and JPEG: skewed 30 or 45, CER 1.000 in every script), and straightened text was
# turned without resampling, which broke Amiri's thin strokes (Arabic skewed 12 or 22: 0.78 and
# 0.72). Now: skews up to 45 degrees either way (so text at any angle ends up upright or on its
# side, which OSD turns), found by the row sums or, where the lines run down the page, the column
# sums (rows alone found text at 60 degrees at 34-41 for 30, italic text at 90 at 12-13 for 0);
# every whole degree tried on a half-size copy, refined on the full one; turned bicubic. The
# variants skew30, rot120 and light_on_dark were added. Then, the same session: light text on a
# dark ground inverted; a faint page (1st-99th grey
# percentiles within 24 levels) read smoothed too (Gaussian 1.2), the more confident kept; an
# enlarged reading that leaves a fifth or more of the lines of ink unread is compared with the
# page as it is (light Chinese on dark, enlarged x1.38, was read sure, 0.78, without a line).
# `--seeds 3 --real DIR`, the old engine (a worktree at bb8e0a1, with the new variants) and the
# new one:
#   CER          tesseract  before   now
#   latin            0.504   0.222  0.000
#   cjk              0.529   0.268  0.021
#   arabic           0.431   0.241  0.016
#   all              0.488   0.244  0.012
#   by variant, before / now: skew7 cjk 0.067/0.000, arabic 0.089/0.005; skew30 1.000/0.000,
#   1.000/0.000, 1.000/0.019; rot120 1.000/0.000, 1.000/0.000, 0.975/0.000; light_on_dark
#   0.000/0.000, 0.191/0.033, 0.005/0.019 (plain Tesseract 0.000 on all three); the rest equal.
#   real scans: mean 0.023 -> 0.018 (eurotext 0.052 -> 0.023, 8071_093.3B 0.049 -> 0.038).
# Faint text saved as JPEG (quality 75; 14, 20 and 28 px; ink 10-20 levels from the ground at
# 128, 140 and 235; upright and turned 25; 36 pages a script, a /tmp probe), without / with the
# smoothed reading: Latin 0.092 / 0.014, Chinese 0.306 / 0.209, Arabic 0.437 / 0.223; the same
# pages saved as PNG 0.000 / 0.000, 0.010 / 0.006, 0.035 / 0.019 (smoothing alone, without the
# comparison, made the PNGs worse: 0.107 and 0.111).
# CPU, both engines in one process alternating on the same pages: the first six variants 162 ->
# 167 ms an image; skewed 30 84 -> 146 ms and turned 120 89 -> 381 ms (now read); light on dark
# 124 -> 107 ms; 22 real photographs 116 -> 136 ms (the wider skew search), 30 sample-web scenes
# 30 -> 37 ms (the lines check reads some again). Left: large Arabic (64 px Amiri 0.67, plain
# 0.40; chaotic with scale: 0.02-0.75 at 0.35-1x, and confidence does not follow it); a lower
# line height for Chinese (26 px for 36) was tried: 0.075 -> 0.035 over 12-40 px on one probe,
# 0.19 at 27 px on another, not kept.
#
# 2026-11-30, Japanese, Korean, Cyrillic (Russian) and Greek lines added (jpn, kor, Tesseract's
# Cyrillic and Greek script models; OSD's rival scripts read too; lines Tesseract's layout
# shatters or loses read as one column; each way up read in OSD's script first; a sure reading
# ends the search only in its own script). `--seeds 1` (63 images: 7 scripts x 9 variants):
#   CER          tesseract  refinery   ratio
#   latin            0.509     0.000    0.00
#   cjk              0.491     0.018    0.04
#   arabic           0.449     0.015    0.03
#   japanese         0.528     0.000    0.00
#   korean           0.524     0.019    0.04   (upright 0.043 against plain 0: two lines' first
#                                               glyph lost in the copy enlarged x1.44)
#   cyrillic         0.515     0.013    0.03   (noisy 0.118: two words of a line lost)
#   greek            0.509     0.000    0.00
#   all              0.504     0.009    0.02
#   CPU ms per image: tesseract 178, refinery 395 (three-line pages; the whole run beside nothing)
# Before (the engine at a834c61, Latin/chi_sim/ara only; both engines in one process alternating
# on seed 1's 63 pages): japanese 0.993 -> 0.000, korean 1.033 -> 0.000, cyrillic 1.016 ->
# 0.004, greek 1.000 -> 0.000 (those pages came back as Arabic or Chinese characters); latin,
# cjk, arabic the same; CPU 680 -> 291 ms a page (turned Chinese 355 -> 215: wrong ways up no
# longer read in every language).
#
# Session 26: a /tmp probe of degradations nobody here had rendered (blur, salt and pepper, a
# gradient ground, lines of two scripts on one page, white lettering outlined on a photograph)
# found the engine worse than plain Tesseract on several. Fixed: speckles removed by a switching
# median (`despeckle`), the second language's look when the first finds no word (blurred
# Chinese), Latin readings under 0.85 compared with Cyrillic and Greek and chi_sim's with jpn
# (blurred Greek and Japanese kept as look-alikes), an uneven ground divided out
# (`flatten_ground`), unread lines read as one line in each other language (`_other_scripts`),
# near-white outlined lettering read from its shapes (`bright_text`), and chi_tra kept when
# 0.06 more confident on the whole. Three variants were added (blurred, speckled, gradient).
# `--seeds 1 --real DIR` (96 images: 8 scripts x 12 variants):
#   CER          tesseract  refinery   ratio
#   latin            0.424     0.000    0.00
#   cjk              0.414     0.020    0.05
#   arabic           0.403     0.025    0.06
#   japanese         0.495     0.000    0.00
#   korean           0.440     0.016    0.04
#   cyrillic         0.426     0.010    0.02
#   greek            0.424     0.000    0.00
#   traditional      0.432     0.037    0.09   (speckled 0.342: chi_sim kept, plain 0.158)
#   all              0.432     0.014    0.03
#   new variants, plain / refinery: blurred 0.000-0.026 / 0.000-0.045; speckled 0.065-0.327 /
#   0.000-0.053 (traditional above); gradient 0.211-0.857 / 0.000-0.090.
#   real scans: mean 0.259 / 0.015 (unchanged). CPU ms per image: tesseract 113, refinery 275.
# The engine before (a8eea87) and after in one process on seed 1's 96 pages (/tmp script): mean
# CER 0.113 -> 0.027, CPU 200 -> 190 ms a page; e.g. speckled Arabic 1.000 -> 0.109, gradient
# Chinese 0.963 -> 0.074, blurred Japanese 1.000 -> 0.000; no page read worse. Probe pages (36):
# salt and pepper 1-8% Latin 0.127-0.952 -> 0.000-0.016, Chinese 0.083-0.750 -> 0.000, Arabic
# 0.200-1.000 -> 0.133-0.533 (sp 1%: 0.200 -> 0.222, the one worse); two-script pages (English
# and Chinese either way, English and Arabic, Japanese and English) 0.233-0.479 -> 0.000; white
# outlined lettering on scikit-learn's china.jpg 1.000 -> 0.000 (plain Tesseract "BUILD").
# Cost: 122 images without text (40 sample-web scenes, 30 photograph crops, 52 of Pillow's test
# images) read the same, 275 -> 315 ms each (the second look at pages the Latin model finds
# empty, despeckle's and bright_text's checks); the 300 dpi journal page 2.5 -> 2.8 s. Left: a
# single large Arabic word (48 px) is not read, nor by plain Tesseract; seed 1's Korean gradient
# page (0.267); Chinese and Arabic under a radial vignette (0.32, 0.66); Tesseract's thresholding_method=2 (Sauvola) for every page was tried and not kept
# (29 of the 122 text-free images then read garbage, Traditional pages worse).
#
# Session 27: real sentences in fonts, sizes and line spacing the renderer does not use
# (--lingua: lingua-py's test sentences, 15 languages, DejaVu Sans/Serif, Liberation Serif/Mono,
# Amiri, WenQuanYi, 14/22/40 px, leading 1.6; upright, rot90, skew12, faint) found readings worse
# than plain Tesseract's: a right word dropped under min_word_conf ("histoire." at 0.18), lines
# lost at one enlargement, a wrong way up read as digits outweighing the page upright, chi_sim
# sure of Latin letters, large CJK glyphs missed by Tesseract's layout (44 px Japanese read as
# upside-down Arabic, CER 1.27). Fixed: unsure words kept on sure lines (`_kept_words`), a
# reading names the page's script only with its letters (`_names_its_script`, `_rank`), sure
# only in its own script (`_sure_in_script`), chi_sim compared with jpn where the search ends
# (`_japanese_turned`), large CJK read as one block too (PSM 6), ink along a line under no word
# sends an enlarged page to be read as it is too (`misses_words`).
# `--seeds 1 --real DIR --lingua DIR --lingua-seeds 3` (machine loaded by the test suite part of
# the time; CPU per image):
#   lingua, 1,044 pages      tesseract  refinery (a66413e -> now)
#   all                         0.497     0.060 -> 0.046   (163 pages better, 1 worse:
#                                                             Vietnamese 40 px faint 0.161 -> 0.179)
#   upright                     0.046     0.055 -> 0.039
#   faint                       0.052     0.055 -> 0.044
#   rot90 / skew12          0.918/0.972   0.061/0.069 -> 0.045/0.056
#   by language, now: en 0.001, de 0.001, fr 0.007, es 0.001, pl 0.003, tr 0.007, vi 0.117 (plain
#   told vie 0.532; upright serif Vietnamese is Tesseract's own weakness), ru 0.001, uk 0.006,
#   el 0.029, ar 0.109, fa 0.303 (no Persian model: ara lacks پ چ ژ گ ی ک), zh 0.073, ja 0.025,
#   ko 0.069 (was 0.143). CPU ms a page: tesseract 191, refinery 302.
#   Large text (a /tmp probe, 80 pages, 8 languages at 36-80 px): 0.067 -> 0.050 (plain 0.101);
#   at 80 px 0.168 -> 0.135, still worse than plain's 0.112 (Arabic at 80 px read empty).
#   The 96 rendered pages: all 0.014 -> 0.011; real scans 0.015 -> 0.014 (8087_054.3B's page is
#   read as it is too: 0.077 -> 0.074, 3.5 -> 5.0 s of CPU). 60 of Pillow's test images (no
#   text) read as before. Tried and not kept: Tesseract told 70 or 300 dpi (it is given none,
#   so 96): 44 px Japanese read right, but Korean pages worse (0.119 -> 0.19), all 0.050 -> 0.052.
#   Left: Tesseract's layout splitting a faint 22 px Chinese line into two blocks (reading order,
#   CER 0.27; plain 0.02); Arabic at 80 px; Persian.
#
# 2026-11-30: large text read shrunk (`OcrEngine._shrunk`). `--seeds 1 --lingua DIR
# --lingua-seeds 0 --lingua-large`, the engine before (eb387c3) and after side by side, each one
# core:
#   large text, 80 pages     tesseract  refinery (before -> after)
#   all                         0.109     0.090 -> 0.056   (3 pages better, none worse)
#   80 px                       0.109     0.131 -> 0.015
#   56 px                       0.099     0.113 -> 0.057
#   Arabic                      0.129     0.386 -> 0.205   (64 px Amiri still reads empty)
#   Korean                      0.563     0.213 -> 0.118
#   CPU ms a page: tesseract 125-127, refinery 137 -> 140.
#   56-80 px Amiri Arabic and 80 px Korean read empty: Tesseract's page layout found no word in
#   them in any language (OSD named no script). Their text lines (the median of `_text_lines`,
#   a line's diacritics on rows of their own left out) are over twice line_px; read unsure,
#   such a page is now read shrunk too, its shortest line to line_px (by the lines' median
#   instead, the shorter line of a 56 px Amiri page was lost: 0.063 on these pages), the more
#   confident characters kept. Shrunk first rather than as a fallback, the sample web's sign
#   photograph (panels of 141 and 57 px around 30-40 px text) read "PABELLÓN MUNICIPAL |":
#   so only an unsure reading is compared. The 96 rendered pages (0.011), 1,044 --lingua pages
#   (0.046) and the real scans (0.014) read exactly as before; of the demo's 239 images, one
#   text-free scene's garbage reading changed (">\nパパ" -> ">14 4"), 4% more Tesseract calls.
#
# 2026-11-30: upside-down Latin where OSD places nothing. Small text turned 135 degrees by
# Pillow's default rotate (nearest neighbour) is upside down once its 45 degrees are
# straightened; OSD placed nothing on it, and the Latin-script model read it upside down at
# 0.75-0.8 ("smoy Suruado" for "Opening hours"), sure enough that no other way up was tried.
# Where OSD is neither sure of the way up nor names a script, a reading under _RIVAL_CONF (0.85)
# now has the other ways up read too (kept only when clearly more confident, as before). A /tmp
# probe of 648 pages (three two-line texts; Pillow's default font, DejaVu Sans and Serif; 10-18
# px; black and grey; upright, turned 15, 33, 90, 135 by nearest and bicubic): CER 0.0150 ->
# 0.0109, 3 pages better (0.80-0.97 -> 0), none worse. The 1,220 --lingua, --lingua-large and
# rendered pages read with the same CER (one page's text changed); Tesseract calls +12% on them,
# +6.5% on the demo's 239 images (three text-free scenes' garbage readings changed).
#
# --short (2026-11-30, load 6-10; CPU time a page): 240 short one-line phrases, before (e63f4b6)
# and after the wordless-line rescue and the sure reading's rank, `--seeds 0 --short`:
#   CER            tesseract  before   after
#   all                0.469   0.331   0.206
#   plain              0.096   0.307   0.090
#   rot15              0.742   0.268   0.087
#   rot90              0.840   0.304   0.279
#   rot180             0.960   0.672   0.603
#   faint              0.079   0.236   0.090
#   dark               0.097   0.197   0.087
#   by language: en 0.452/0.000/0.000, zh 0.576/0.331/0.230, ar 0.318/0.402/0.282,
#   ja 0.500/0.333/0.125, ko 0.571/1.179/0.679, ru 0.352/0.000/0.000
#   CPU ms a page: tesseract 91-93, refinery 149 -> 168
