"""A small reading-comprehension benchmark that leaked into the sample web.

Benchmarks are built from web text (SQuAD's contexts are Wikipedia paragraphs), so a crawl finds
their passages again: the contamination that `refinery filter --decontaminate` marks. This one,
`sampleweb-reading`, takes its contexts from a few of the sample web's crawlable, consented
reference pages, one per language in `LANGS`, chosen by the web's seed; `write_eval_set` writes
it as JSONL in the shape such benchmarks ship (`id`, `context`, `question`, `answer`), and
`leaked_urls` names the pages a decontaminated filter run must mark (ground truth for tests).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from sampleweb.model import Page, SampleWeb

NAME = "sampleweb-reading"
LANGS = ("en", "fr", "zh")
FILE = f"evals/{NAME}.jsonl"
MIN_CONTEXT_CHARS = 80  # a paragraph, not a heading
QUESTION = {
    "en": "According to the passage, what is said about {title}?",
    "fr": "D'après le passage, que dit-on de « {title} » ?",
    "zh": "根据这段文字，关于「{title}」说了什么？",
}


def _candidates(web: SampleWeb, lang: str) -> list[Page]:
    """Pages a filter run sees as allowed training text: crawlable, consented, static, unique,
    high-quality reference pages of the language, with a context's worth of text."""
    out = []
    for page in web.content_pages():
        lab = page.labels
        if (
            lab["lang"] == lang
            and lab["page_type"] == "reference"
            and lab["quality"] == "high"
            and lab["expect_crawl_allowed"]
            and lab["expect_training_allowed"]
            and not lab["noai"]
            and not lab["js_only_text"]
            and not lab["redirect_to"]
            and lab["dup_cluster"] is None
            and len(_paragraphs(lab["main_text"])) >= 3
            and len(_context(lab["main_text"])) >= MIN_CONTEXT_CHARS
        ):
            out.append(page)
    return sorted(out, key=lambda p: (p.site, p.path))


def leaked_pages(web: SampleWeb) -> list[Page]:
    """The pages whose passages the benchmark took, one per language of LANGS (seeded)."""
    rng = random.Random(f"{NAME}:{web.seed}")
    chosen = []
    for lang in LANGS:
        pool = _candidates(web, lang)
        if pool:
            chosen.append(rng.choice(pool))
    return chosen


def _paragraphs(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip()]


def _context(text: str) -> str:
    """The middle paragraph of a page's main text, as a benchmark takes one."""
    paragraphs = _paragraphs(text)
    return paragraphs[len(paragraphs) // 2] if paragraphs else ""


def _first_sentence(text: str) -> str:
    m = re.search(r".+?(?:[.!?](?=\s|$)|[。！？])", text, re.S)
    return (m.group(0) if m else text).strip()


def eval_items(web: SampleWeb) -> list[dict]:
    """One item per leaked page: its middle paragraph as the context, a question on its title,
    and the context's first sentence as the answer."""
    items = []
    for i, page in enumerate(leaked_pages(web)):
        context = _context(page.labels["main_text"])
        lang = page.labels["lang"]
        items.append(
            {
                "id": f"{NAME}-{i:03d}",
                "lang": lang,
                "context": context,
                "question": QUESTION[lang].format(title=page.labels["title"]),
                "answer": _first_sentence(context),
            }
        )
    return items


def write_eval_set(web: SampleWeb, out_dir: str | Path) -> Path:
    """Write the benchmark to `<out_dir>/evals/sampleweb-reading.jsonl`; return the path."""
    path = Path(out_dir) / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in eval_items(web)),
        encoding="utf-8",
    )
    return path


def leaked_urls(web: SampleWeb, base_url_for) -> list[str]:
    """The absolute URLs of the leaked pages under `base_url_for(site)`."""
    return [base_url_for(p.site) + p.path for p in leaked_pages(web)]
