"""LLM grading through the teacher endpoint (`common.teacher.TeacherClient`, OpenAI-compatible):
each document gets a 0..5 grade at temperature 0, later distilled into a fastText model."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

PROMPT = (
    "Rate the quality of the following web document as pretraining data for a language model, "
    "on a scale from 0 (spam, boilerplate, incoherent) to 5 (clear, informative, well written, "
    "like a reference text). Answer with a single digit.\n\n{text}"
)


class GraderError(RuntimeError):
    """The grading endpoint is not configured or answered something that is not a grade."""


def parse_grade(content: str) -> int:
    """The first digit 0..5 in a model answer."""
    m = re.search(r"[0-5]", content if isinstance(content, str) else "")
    if not m:
        raise GraderError(f"grader answer has no grade 0-5: {str(content)[:80]!r}")
    return int(m.group())


def grade_or_reason(content: str) -> tuple[int | None, str | None]:
    """(grade, None), or (None, why) for an answer without a grade 0-5 ('I cannot rate this',
    an empty answer): one such answer is an ungraded row, never the end of the run."""
    try:
        return parse_grade(content), None
    except GraderError as exc:
        return None, str(exc)


def grade_documents(
    docs: Sequence[Mapping[str, Any]],
    base_url: str,
    model: str,
    api_key: str | None = None,
    concurrency: int = 4,
    max_chars: int = 3000,
    *,
    consent: Any = None,
    ungraded: list[dict] | None = None,
) -> list[int | None]:
    """Grade many documents (rows with `text` and their consent: `training_allowed`, and the
    `id`/`url` the consent ledger knows them by), a few requests in flight; order is preserved.

    Only documents the one consent rule allows are sent (common.consent: their flag is the
    boolean true and `consent`, the ledger, has not opted them out); the caller drops the others
    first (`Consent.keep`). A document that may not be sent raises GraderError before any
    request is made, naming it and why.

    An answer without a grade 0-5 gives None for its document, and {'id', 'url', 'reason'} is
    appended to `ungraded` when given: the caller records the ungraded rows and goes on."""
    if not base_url:
        raise GraderError(
            "the llm label source needs a teacher base_url (OpenAI-compatible endpoint)"
        )
    from common.consent import NO_LEDGER
    from common.teacher import TeacherClient

    rule = consent or NO_LEDGER
    for i, doc in enumerate(docs):
        if not isinstance(doc, Mapping):
            raise GraderError(
                f"grade_documents: document #{i} is a {type(doc).__name__}, not a row; pass rows "
                "with `text` and `training_allowed` (only consented documents go to the grader)"
            )
        why = rule.why_not(doc)
        if why is not None:
            name = doc.get("id") or doc.get("url") or f"#{i}"
            raise GraderError(
                f"grade_documents: document {name} may not go to the grader: {why}; drop "
                "opted-out documents first (common.consent.Consent.keep)"
            )
    client = TeacherClient(base_url, model, api_key, consent=rule)

    def grade(doc: Mapping[str, Any]) -> int:
        text = str(doc.get("text") or "")
        msg = [{"role": "user", "content": PROMPT.format(text=text[:max_chars])}]
        grade, why = grade_or_reason(client.chat(msg, items=[doc], temperature=0, max_tokens=4))
        if why is not None and ungraded is not None:
            ungraded.append({"id": doc.get("id"), "url": doc.get("url"), "reason": why})
        return grade

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return list(pool.map(grade, docs))
