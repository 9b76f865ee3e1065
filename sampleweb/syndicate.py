"""Near-duplicate and exact-duplicate copies of pages, syndicated onto the mirror site."""

from __future__ import annotations

import copy
import random
from typing import TYPE_CHECKING

from .content import CJK, LANGS
from .markup import article, document

if TYPE_CHECKING:
    from .builder import Builder
    from .model import Page

MIRROR = "mirror-multi"
FILLERS = {
    "en": "really",
    "de": "wirklich",
    "fr": "vraiment",
    "es": "realmente",
    "ja": "",
    "zh": "",
}
NEAR_PER_LANG = 7
DUP_TYPES = ("article", "recipe", "reference")


def edit_paragraphs(paras: list[str], lang: str, rng: random.Random) -> list[str]:
    """Small edits a syndicator makes: drop a paragraph (if 3+), delete and add a word or two."""
    out = list(paras)
    if len(out) >= 3:
        del out[rng.randrange(1, len(out))]
    # Edit a real paragraph, not a short list item such as "2 carrots".
    i = rng.choice([k for k, para in enumerate(out) if len(para) >= 40] or [0])
    text = out[i]
    if lang in CJK:
        cut = rng.randrange(len(text) // 4, 3 * len(text) // 4)
        text = text[:cut] + text[cut + rng.randint(2, 4) :]
    else:
        words = text.split()
        j = rng.randrange(1, max(2, len(words) - 1))
        del words[j]
        words.insert(rng.randrange(1, len(words)), FILLERS[lang])
        text = " ".join(words)
    out[i] = text
    return out


def add_duplicates(b: Builder, regular: list[Page]) -> None:
    """Per language: near-duplicate clusters (1-2 edited copies each) and one exact duplicate."""
    for lang in LANGS:
        candidates = [
            p
            for p in regular
            if p.labels["lang"] == lang
            and p.labels["page_type"] in DUP_TYPES
            and not p.labels["images"]
        ]
        chosen = b.rng.sample(candidates, min(len(candidates), NEAR_PER_LANG))
        for k, orig in enumerate(chosen[:-1]):
            cluster = f"near-{lang}-{k}"
            orig.labels["dup_cluster"] = cluster
            texts = {orig.labels["main_text"]}
            for c in range(1 + k % 3):  # syndicated to one, two or three places
                path = f"/syndicated/{lang}/{c}/{orig.path.rsplit('/', 1)[-1]}"
                texts.add(
                    _near_copy(b, orig, path, cluster, canonical=k % 2 == 0, avoid=texts).labels[
                        "main_text"
                    ]
                )
        if chosen:
            orig = chosen[-1]
            cluster = f"exact-{lang}"
            orig.labels["dup_cluster"] = cluster
            labels = copy.deepcopy(orig.labels)
            labels.pop("expect_crawl_allowed")
            labels.pop("expect_training_allowed")
            b.add(MIRROR, f"/copies/{lang}/{orig.path.rsplit('/', 1)[-1]}", orig.body, **labels)


def _near_copy(
    b: Builder, orig: Page, path: str, cluster: str, *, canonical: bool, avoid: set[str]
) -> Page:
    lab = orig.labels
    for _ in range(20):  # each copy in a cluster gets its own edits
        paras = edit_paragraphs(lab["main_text"].split("\n"), lab["lang"], b.rng)
        if "\n".join(paras) not in avoid:
            break
    else:
        raise RuntimeError(f"could not make a distinct near-duplicate of {orig.site}{orig.path}")
    head = f'<link rel="canonical" href="{{{{site:{orig.site}}}}}{orig.path}">' if canonical else ""
    credit = f'<p class="credit">Syndicated from <a href="{{{{site:{orig.site}}}}}{orig.path}">{orig.site}</a></p>'
    body = document(
        b.site(MIRROR),
        lab["lang"],
        lab["title"],
        article(lab["title"], paras) + credit,
        head_extra=head,
    )
    return b.add(
        MIRROR,
        path,
        body,
        lang=lab["lang"],
        page_type=lab["page_type"],
        topic=lab["topic"],
        quality=lab["quality"],
        is_reference=False,
        is_content=True,
        dup_cluster=cluster,
        title=lab["title"],
        main_text="\n".join(paras),
    )
