"""OCR of text-rich images (crawlers/images/ocr.py) against plain Tesseract, side by side: the
character error rate per script and variant, and the cost per image.

    .venv/bin/python bench/ocr.py [--seeds N]

Images (tests/images/ocr_render.py): Latin, Chinese and Arabic lines rendered upright, skewed
7 degrees, on their side (90), upside down (180), grey on grey, and on a blotchy background;
seed 0 draws the script's three lines, other seeds two of them in a random order.

Plain Tesseract is the `tesseract` program of Debian's tesseract-ocr with its defaults (page
segmentation 3), told the script's language (`-l eng|chi_sim|ara`: an oracle the engine is not
given: it finds the script itself). Refinery's engine is `OcrEngine().read(image)`: contrast,
orientation, skew and script handled around the same Tesseract. CER: edit distance over the
truth's characters, white space ignored, reading order counted (lines out of order are errors).
Cost: CPU milliseconds per image (the engine: this process's CPU time; the program: its
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=2, help="images per script and variant")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "ocr.json")
    args = ap.parse_args()
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")  # one core each, engine and program alike
    engine = OcrEngine()
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

    def mean(xs):
        return sum(xs) / len(xs)

    print(f"{'script':8} {'variant':13} {'tesseract':>9} {'refinery':>9}")
    per_script: dict = defaultdict(lambda: defaultdict(list))
    for (script, variant), by in cer.items():
        print(f"{script:8} {variant:13} {mean(by['tesseract']):9.3f} {mean(by['refinery']):9.3f}")
        for tool, xs in by.items():
            per_script[script][tool] += xs
            per_script["all"][tool] += xs
    print("\nCER per script (mean over variants and seeds)")
    print(f"{'script':8} {'tesseract':>9} {'refinery':>9} {'ratio':>7}")
    summary = {}
    for script, by in per_script.items():
        t, r = mean(by["tesseract"]), mean(by["refinery"])
        summary[script] = {"tesseract": round(t, 4), "refinery": round(r, 4)}
        print(f"{script:8} {t:9.3f} {r:9.3f} {r / t if t else float('nan'):7.2f}")
    t_ms, r_ms = 1000 * mean(cpu["tesseract"]), 1000 * mean(cpu["refinery"])
    print(f"\nCPU ms per image: tesseract {t_ms:.0f}  refinery {r_ms:.0f}  ratio {r_ms / t_ms:.2f}")
    result = {
        "images": len(cpu["refinery"]),
        "cer": summary,
        "cer_by_variant": {
            f"{s}/{v}": {k: round(mean(x), 4) for k, x in by.items()} for (s, v), by in cer.items()
        },
        "cpu_ms_per_image": {"tesseract": round(t_ms), "refinery": round(r_ms)},
        "tesseract_version": engine.version,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()

# RESULTS
