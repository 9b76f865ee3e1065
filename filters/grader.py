"""LLM grading through the teacher endpoint (`synth.teacher.TeacherClient`, OpenAI-compatible):
each document gets a 0..5 grade at temperature 0, later distilled into a fastText model."""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

PROMPT = (
    "Rate the quality of the following web document as pretraining data for a language model, "
    "on a scale from 0 (spam, boilerplate, incoherent) to 5 (clear, informative, well written, "
    "like a reference text). Answer with a single digit.\n\n{text}"
)


class GraderError(RuntimeError):
    """The grading endpoint is not configured or answered something that is not a grade."""


def parse_grade(content: str) -> int:
    """The first digit 0..5 in a model answer."""
    m = re.search(r"[0-5]", content)
    if not m:
        raise GraderError(f"grader answer has no grade 0-5: {content[:80]!r}")
    return int(m.group())


def grade_documents(
    texts: Sequence[str],
    base_url: str,
    model: str,
    api_key: str | None = None,
    concurrency: int = 4,
    max_chars: int = 3000,
) -> list[int]:
    """Grade many documents, a few requests in flight; order is preserved."""
    if not base_url:
        raise GraderError(
            "the llm label source needs a teacher base_url (OpenAI-compatible endpoint)"
        )
    from synth.teacher import TeacherClient

    client = TeacherClient(base_url, model, api_key)

    def grade(text: str) -> int:
        msg = [{"role": "user", "content": PROMPT.format(text=text[:max_chars])}]
        return parse_grade(client.chat(msg, temperature=0, max_tokens=4))

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return list(pool.map(grade, texts))
