"""The ablation spec: arms, one proxy-model config, a token budget, seeds and evaluation sets.

```yaml
name: filter-vs-raw
config: proxy            # a training config (training/configs/*.yaml name or path); its
                         # `pretrain` stage is the recipe every arm trains with
tokens: 200000           # training tokens per run, equal across arms (steps follow the seq_len)
seeds: [0, 1, 2]         # one run per arm and seed (3+: intervals and paired differences)
arms:
  refinery: {mixture: lake/mixtures/tiny-pretrain}     # a built mixture directory
  raw: {mixture_spec: specs/raw.yaml}                  # built here with the mixture builder
eval_sets:
  - {name: heldout, path: eval.parquet, text_column: text, lang_column: lang}
```

Paths: `lake/...` against the lake root, absolute as given, else relative to the spec's directory.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from common import yamlio
from training.mixture.spec import resolve_path


class AblationError(ValueError):
    """An ablation cannot run as specified; the message names the file, the field and the fix."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def dir_name_problem(name: str) -> str | None:
    """Why `name` cannot name a directory of the ablation's output (None: it can). Names become
    directories (`arms/<arm>`, `reports/ablation/<name>`): `.` or `..` would be the output
    directory itself or its parent, which a redone arm removes."""
    if not name or not all(c.isalnum() or c in "-_." for c in name):
        return f"name {name!r} must be letters, digits, '-', '_' or '.'"
    if set(name) == {"."}:
        return f"name {name!r} is only dots; give it a letter or digit (it names a directory)"
    return None


def _directory_name(name: str) -> str:
    problem = dir_name_problem(name)
    if problem:
        raise ValueError(problem)
    return name


DirName = Annotated[str, AfterValidator(_directory_name)]  # a name that becomes a directory


class ArmSpec(_Strict):
    """One arm: a built mixture directory, or a mixture spec built from the same input (with a
    filter config: the input's documents filtered with it first)."""

    mixture: str | None = None
    mixture_spec: str | None = None
    filter: str | None = None  # filter config YAML (needs mixture_spec and input)
    input: str | None = None  # the documents the filter reads (an extract directory or parquet)

    @model_validator(mode="after")
    def _one_source(self) -> ArmSpec:
        if (self.mixture is None) == (self.mixture_spec is None):
            raise ValueError("give exactly one of mixture (a directory) or mixture_spec (a YAML)")
        if self.filter is not None and (self.mixture_spec is None or self.input is None):
            raise ValueError("filter needs mixture_spec and input (the documents to filter)")
        return self


class EvalSetSpec(_Strict):
    """Held-out evaluation texts: a Parquet, JSONL or text file (one text per line), or a
    directory of .txt files; the language per text from a column, or one for the whole set."""

    name: DirName = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    path: str
    text_column: str = "text"
    lang_column: str | None = "lang"
    lang: str | None = None  # the whole set's language (overrides lang_column)
    max_texts: int = Field(default=0, ge=0)  # per language; 0: all
    max_chars: int = Field(default=4000, ge=64)  # a longer text is cut (at a whitespace)


class TaskSpec(_Strict):
    """The zero-shot tasks built from each evaluation set (see training/ablate/texts.py)."""

    choices: int = Field(default=4, ge=2)
    context_words: int = Field(default=48, ge=4)  # CJK: characters count as words x2
    continuation_words: int = Field(default=12, ge=2)
    items_per_text: int = Field(default=2, ge=1)
    seed: int = 0
    # word_order: the passage's next words in their own order against the same words reordered
    # (what a proxy of a few million tokens can already tell apart; off unless named)
    kinds: list[Literal["continuation", "cloze", "word_order"]] = Field(
        default=["continuation", "cloze"], min_length=1
    )


class AblationSpec(_Strict):
    """A whole ablation (see the module docstring)."""

    name: DirName = Field(default="ablation", min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    config: str = "proxy"
    stage: str = "pretrain"
    tokens: int = Field(gt=0)
    seeds: list[int] = Field(default=[0, 1, 2], min_length=1)
    arms: dict[str, ArmSpec] = Field(min_length=1)
    eval_sets: list[EvalSetSpec] = Field(min_length=1)
    tasks: TaskSpec = TaskSpec()
    ngram: int = Field(default=13, ge=3)
    max_overlap: float = Field(default=0.05, ge=0, le=1)  # share of an eval set's n-grams
    eval_batch_size: int = Field(default=8, ge=1)

    @model_validator(mode="after")
    def _names(self) -> AblationSpec:
        for arm in self.arms:
            problem = dir_name_problem(arm)
            if problem:
                raise ValueError(f"arms: {problem}")
        names = [e.name for e in self.eval_sets]
        if len(set(names)) != len(names):
            raise ValueError(f"eval_sets: names must differ, got {names}")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds: each seed once, got {self.seeds}")
        return self


def parse_spec(data: Any, source: str = "<spec>") -> AblationSpec:
    """Validate a spec mapping; AblationError names each bad field."""
    if not isinstance(data, dict):
        raise AblationError(f"{source}: an ablation spec must be a YAML mapping")
    try:
        return AblationSpec.model_validate(data)
    except ValidationError as exc:
        from common.errors import validation_problems

        raise AblationError(
            f"{source}: invalid ablation spec: {validation_problems(exc, model=AblationSpec)}"
        ) from None


def load_spec(path: str | Path) -> AblationSpec:
    """Read and validate an ablation spec YAML."""
    path = Path(path)
    if not path.is_file():
        raise AblationError(
            f"{path}: ablation spec not found; pass a YAML file (see docs/ablate.md)"
        )
    try:
        data = yamlio.load_file(path)
    except yamlio.YamlFileError as exc:  # not UTF-8 or not valid YAML: names the file and where
        raise AblationError(str(exc)) from None
    return parse_spec(data, str(path))


def resolve(path: str, spec_dir: Path, lake_root: Path | None = None) -> Path:
    """A spec path: `lake/...` against the lake root, absolute as given, else spec-relative."""
    return resolve_path(path, spec_dir, lake_root)


def file_digest(path: Path) -> str:
    """sha256 of a file, or of a directory's files (names and contents), for the fingerprint."""
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        h.update(str(f.relative_to(path) if path.is_dir() else f.name).encode())
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def fingerprint(parts: dict[str, Any]) -> str:
    """A stable hash of what an arm's results depend on."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()
