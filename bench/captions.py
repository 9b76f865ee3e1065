"""Synthetic captions, end to end: `synth.captions.make_captions` (keywords + brief from the CoCa
captioner trained here, every caption scored with the project's CLIP, rejects kept) against the
loop a user would otherwise write with open_clip: per image, caption it, then encode the image
and its two captions with CLIP, one image at a time. Same images, same models, same run.

Inputs: a lake with kept image pairs and a CLIP model (`refinery demo` leaves both); the pairs
are repeated with fresh ids to N and 10N. The captioner is trained here first (few steps: speed,
not quality, is measured) unless --captioner names one.

    .venv/bin/python bench/captions.py --lake /tmp/demo1/lake --sizes 40,400
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _pairs_table(lake: Path, n: int, out: Path) -> Path:
    """N kept pairs (repeating the lake's, fresh ids) as a pairs.parquet under out/."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from synth.captions import read_pairs

    kept, _ = read_pairs(sorted((lake / "images" / "pairs").glob("shard=*")))
    if not kept:
        raise SystemExit(f"{lake}: no kept image pairs; run `refinery demo --lake {lake}` first")
    rows = []
    images = out / "images"
    images.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        src = kept[i % len(kept)]
        # image paths are relative to the pairs file (an absolute path is refused): a copy here
        name = Path(src["image_file"]).name
        if not (images / name).exists():
            shutil.copyfile(src["image_file"], images / name)
        rows.append(
            {
                "id": f"{src['pair_id']}~{i}",
                "image_path": f"images/{name}",
                "image_sha256": src["image_sha256"],
                "drop_reason": None,
                "training_allowed": True,
            }
        )
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), out / "pairs.parquet")
    return out


def ours(pairs_dir: Path, out: Path, captioner, clip) -> float:
    from synth.captions import make_captions

    started = time.perf_counter()
    s = make_captions(
        pairs_dir, out, levels=("keywords", "brief"), captioner=captioner, clip=clip, min_score=-1
    )
    seconds = time.perf_counter() - started
    assert s["rows"] == 2 * s["pairs"], s
    return seconds


def plain_loop(pairs_dir: Path, captioner, clip) -> float:
    """What a user writes with open_clip: one image at a time, caption, then CLIP scores."""
    import pyarrow.parquet as pq
    import torch
    from PIL import Image

    from synth.captions import keywords_of

    model, preprocess, tokenizer = clip.loaded.model, clip.loaded.preprocess, clip.loaded.tokenizer
    started = time.perf_counter()
    for row in pq.read_table(pairs_dir / "pairs.parquet").to_pylist():
        image = Image.open(pairs_dir / row["image_path"]).convert("RGB")
        brief = captioner.generate([image])[0]
        texts = [keywords_of(brief) or brief, brief]
        with torch.inference_mode():
            fi = model.encode_image(preprocess(image)[None], normalize=True)
            ft = model.encode_text(tokenizer(texts), normalize=True)
            (fi @ ft.T).tolist()
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--lake", default=os.environ.get("REFINERY_HOME", "lake"))
    ap.add_argument("--sizes", default="40,400", help="N and 10N pairs")
    ap.add_argument("--captioner", default=None, help="a captioner directory (default: train one)")
    ap.add_argument("--steps", type=int, default=60, help="captioner training steps when training")
    a = ap.parse_args()

    import torch

    torch.set_num_threads(min(2, os.cpu_count() or 1))
    from training.clip import ClipScorer
    from training.coca import load_captioner, train_coca

    lake = Path(a.lake).resolve()
    work = Path(tempfile.mkdtemp(prefix="bench-captions-"))
    cap_dir = a.captioner
    if cap_dir is None:
        cap_dir = work / "captioner"
        train_coca(sorted((lake / "images" / "pairs").glob("shard=*")), cap_dir, steps=a.steps)
    captioner = load_captioner(cap_dir)
    clip = ClipScorer(lake / "models" / "clip")
    sizes = [int(x) for x in a.sizes.split(",")]
    print(f"lake {lake}; captioner {cap_dir}; torch threads {torch.get_num_threads()}")
    print(
        f"{'pairs':>6} {'ours s':>8} {'ours pairs/s':>13} {'loop s':>8} {'loop pairs/s':>13} {'ratio':>6}"
    )
    warm = _pairs_table(lake, 4, work / "pairs-warm-up")  # first-call costs out of the figures
    ours(warm, work / "out-warm-up", captioner, clip)
    plain_loop(warm, captioner, clip)
    results = {}
    for n in sizes:
        pairs_dir = _pairs_table(lake, n, work / f"pairs-{n}")
        t_ours = ours(pairs_dir, work / f"out-{n}", captioner, clip)
        t_loop = plain_loop(pairs_dir, captioner, clip)
        results[n] = (t_ours, t_loop)
        print(
            f"{n:>6} {t_ours:>8.2f} {n / t_ours:>13.1f} {t_loop:>8.2f} {n / t_loop:>13.1f} "
            f"{t_loop / t_ours:>5.2f}x"
        )
    if len(sizes) == 2:
        (n1, (o1, l1)), (n2, (o2, l2)) = results.items()
        print(f"cost growth for {n2 / n1:.0f}x the pairs: ours x{o2 / o1:.2f}, loop x{l2 / l1:.2f}")


if __name__ == "__main__":
    main()
