"""Mixture specs: YAML validated by pydantic, with errors that name the field and the fix.

Path rule (sources, tokenizer): a path starting with `lake/` is resolved against the lake root
(`$REFINERY_HOME`, else `./lake`), so `lake/filter/documents.parquet` means
`$REFINERY_HOME/filter/documents.parquet`; an absolute path is used as is; any other path is
relative to the directory of the spec file. Globs (`*.parquet`) are allowed in source paths.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from common import yamlio
from common.lake import lake_root as common_lake_root

# text_rich: text-rich images with their OCR text (`refinery images ocr`'s pairs.parquet, a `pairs`
# source), weighted apart from the image-caption pairs they were selected from.
Modality = Literal["text", "interleaved", "image_caption", "domain_image_text", "text_rich"]
# How a source's rows become documents. `text`: its text_column. The image kinds read the lake's
# image and synthetic outputs and put an image block (`image_tokens` ids of `<|image|>`) where each
# image goes (training/mixture/images.py says what each kind reads).
SourceKind = Literal[
    "text", "pairs", "interleaved", "domain_images", "charts", "tables", "captions", "domain_qa"
]
IMAGE_KINDS = ("pairs", "interleaved", "domain_images", "charts", "tables", "captions", "domain_qa")
# Kinds whose rows name their image by pair id only: they need `pairs` to find the image file.
PAIR_KINDS = ("interleaved", "domain_images", "captions")
WEIGHT_EPS = 1e-6


class SpecError(ValueError):
    """A mixture spec is invalid; the message lists `field: problem` lines."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PredicateError(ValueError):
    """A `where` predicate is not one plain SQL expression over a row's columns."""


def _walk(node: Any) -> Any:
    """Every dict inside a parsed-SQL JSON tree."""
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def normalize_predicate(expr: str) -> str:
    """Parse `expr` with DuckDB's own parser as ONE scalar expression; return it re-printed from the tree.

    The re-printed form is what goes into SQL, so text the parser did not read as part of the
    expression (comments, a `)` that closes an outer parenthesis, a second statement) can never
    reach the query. Subqueries are refused: a predicate looks at its own row, not at other data.
    """
    import duckdb

    if not expr or not expr.strip():
        raise PredicateError("is empty; give a SQL expression such as lang = 'en'")
    if "\x00" in expr:
        raise PredicateError("contains a NUL character")
    con = duckdb.connect()
    try:
        tree = json.loads(
            con.execute("SELECT json_serialize_sql(?)", ["SELECT " + expr]).fetchone()[0]
        )
        if tree.get("error"):
            raise PredicateError(
                f"{expr!r} is not one SQL expression ({tree.get('error_message', 'parse error')}); "
                "write a single boolean expression such as lang = 'en' AND quality_score >= 0.5"
            )
        stmts = tree.get("statements", [])
        node = stmts[0]["node"] if len(stmts) == 1 else {}
        plain = (
            node.get("type") == "SELECT_NODE"
            and len(node.get("select_list", [])) == 1
            and node.get("from_table", {}).get("type") == "EMPTY"
            and not node.get("where_clause")
            and not node.get("group_expressions")
            and not node.get("having")
            and not node.get("qualify")
            and not node.get("sample")
            and not node.get("modifiers")
            and not (node.get("cte_map") or {}).get("map")
            and not node["select_list"][0].get("alias")
        )
        if not plain:
            raise PredicateError(
                f"{expr!r} is not one SQL expression (it parses as {len(stmts)} statement(s) or a "
                "list/clause); write a single boolean expression such as lang = 'en'"
            )
        if any(d.get("class") == "SUBQUERY" for d in _walk(node["select_list"])):
            raise PredicateError(
                f"{expr!r} contains a subquery; a predicate may only use the row's own columns"
            )
        sql = con.execute("SELECT json_deserialize_sql(?)", [json.dumps(tree)]).fetchone()[0]
    except duckdb.Error as exc:
        raise PredicateError(f"{expr!r} cannot be parsed: {str(exc).splitlines()[0]}") from None
    finally:
        con.close()
    if not sql.startswith("SELECT "):
        raise PredicateError(f"{expr!r} did not round-trip through the SQL parser ({sql!r})")
    return sql[len("SELECT ") :]


def quote_ident(name: str) -> str:
    """A column name as a quoted SQL identifier (embedded quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def _check_predicate(v: str | None) -> str | None:
    if v is not None:
        normalize_predicate(v)
    return v


class RepeatRule(_Strict):
    """Per-document repetition: documents matching `where` count `times` as often (first match wins)."""

    where: str = Field(min_length=1)
    times: float = Field(gt=0, allow_inf_nan=False)

    _where = field_validator("where")(_check_predicate)


class SourceSpec(_Strict):
    """One dataset feeding a bucket."""

    path: str = Field(min_length=1)
    where: str | None = None
    weight: float | None = Field(default=None, ge=0, le=1)
    text_column: str = "text"
    # Optional sources may be missing or empty (e.g. image stages not run yet); the report says so.
    optional: bool = False
    kind: SourceKind = "text"
    # pairs.parquet path/glob: resolves pair ids to image files (and each image's own consent).
    pairs: str | None = None
    # Rows the filter marked `contaminated` (they share n-grams with an evaluation set, see
    # filters/decontam.py) are left out unless this says include; the manifest counts them.
    contaminated: Literal["exclude", "include"] = "exclude"
    # Rows an image kind's producing stage dropped (a pair's `drop_reason`, a synthetic row's
    # `status` other than 'ok', a domain image not `selected`: sources.UPSTREAM_KEPT) are left
    # out without a `where` saying so, unless this says include; the manifest counts those
    # `where` did not leave out as the source's `rejected.upstream_dropped`.
    dropped: Literal["exclude", "include"] = "exclude"

    _where = field_validator("where")(_check_predicate)

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if self.dropped == "exclude":  # a spec without `dropped: include` keeps its hash
            data.pop("dropped", None)
        return data

    @field_validator("text_column")
    @classmethod
    def _column(cls, v: str) -> str:
        if not v or "\x00" in v:
            raise ValueError("must be a non-empty column name")
        return v

    @model_validator(mode="after")
    def _pairs_needed(self) -> SourceSpec:
        if self.kind in PAIR_KINDS and not self.pairs:
            raise ValueError(
                f"kind {self.kind!r} names images by pair id: give `pairs:` (e.g. "
                "lake/images/pairs/**/pairs.parquet) so each image file can be found"
            )
        if self.pairs and self.kind == "text":
            raise ValueError("pairs: only image kinds read pairs; drop it or set `kind`")
        if self.dropped == "include" and self.kind == "text":
            raise ValueError(
                "dropped: only image kinds leave out the rows their stage dropped; a text "
                "source selects with `where` (e.g. drop_reason IS NULL): drop it or set `kind`"
            )
        return self


class BucketSpec(_Strict):
    """A named share of the mixture, optionally split into groups by a column (e.g. lang)."""

    weight: float = Field(ge=0, le=1)
    sources: list[SourceSpec] = Field(min_length=1)
    split_by: str | None = None
    temperature: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    max_epochs: float | None = Field(default=None, gt=0)
    modality: Modality = "text"
    repeat: list[RepeatRule] = []

    @model_validator(mode="after")
    def _kinds(self) -> BucketSpec:
        for i, src in enumerate(self.sources):
            if self.modality == "text" and src.kind != "text":
                raise ValueError(
                    f"sources[{i}].kind: {src.kind!r} carries images; put it in a bucket whose "
                    "modality is interleaved, image_caption, domain_image_text or text_rich"
                )
            if self.modality != "text" and src.kind == "text":
                raise ValueError(
                    f"sources[{i}].kind: modality {self.modality!r} needs an image kind "
                    f"({', '.join(IMAGE_KINDS)}); as `text` its images would be lost"
                )
        return self

    @model_validator(mode="after")
    def _source_weights(self) -> BucketSpec:
        given = [s.weight is not None for s in self.sources]
        if any(given) and not all(given):
            raise ValueError("sources: give a weight to every source of the bucket or to none")
        if all(given):
            if self.split_by:
                raise ValueError(
                    "sources[].weight cannot be combined with split_by (groups come from the column)"
                )
            total = sum(s.weight or 0 for s in self.sources)
            if abs(total - 1) > WEIGHT_EPS:
                raise ValueError(f"sources[].weight sum to {total:g}, must sum to 1")
        return self


class TokenizerTrainSpec(_Strict):
    """Train a tokenizer as part of the build (saved into the mixture directory)."""

    vocab_size: int = Field(default=150_000, ge=261)
    sample_tokens: int = Field(default=10_000_000, gt=0)
    sources: list[str] | None = None  # default: every source of every bucket
    # files: the sources' rows as they come (a file's share of the sample is its share of the
    # text); mixture: each bucket, source and language group at its share of the mixture
    # (weights, split_by temperature, max_epochs caps), so the vocabulary is learnt from the
    # language mix the model trains on (docs/ablate.md: a German-heavy sample cost English text).
    sample: Literal["files", "mixture"] = "files"

    @model_validator(mode="after")
    def _sample_of_buckets(self) -> TokenizerTrainSpec:
        if self.sample == "mixture" and self.sources:
            raise ValueError(
                "sample: mixture samples the buckets' own sources; drop `sources` or use "
                "sample: files"
            )
        return self


class TokenizerTrain(_Strict):
    train: TokenizerTrainSpec


class StageSpec(_Strict):
    """A curriculum stage: from the previous stage's end to `until` (fraction of total_tokens)."""

    name: str = Field(min_length=1)
    until: float = Field(gt=0, le=1)
    # buckets not named keep their top-level weight; each a share in 0..1
    weights: dict[str, Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]] = {}


class EvalSpec(_Strict):
    """Held-out eval sequences per bucket/group, taken from documents kept out of the shards."""

    sequences_per_group: int = Field(default=4, ge=0)
    max_fraction: float = Field(default=0.05, ge=0, lt=1)


class MixtureSpec(_Strict):
    """A whole mixture: buckets and their weights, sequence length, token budget, seed."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    seq_len: int = Field(ge=8, le=1_048_576)
    total_tokens: int = Field(gt=0)
    seed: int = Field(default=0, ge=0)
    tokenizer: str | TokenizerTrain
    buckets: dict[str, BucketSpec] = Field(min_length=1)
    tolerance: float = Field(default=0.01, gt=0, lt=1)
    allow_shortfall: bool = False
    shard_sequences: int = Field(default=4096, ge=1)
    # Tokens per image: each image is written as this many consecutive `<|image|>` ids.
    image_tokens: int = Field(default=0, ge=0)
    stages: list[StageSpec] = []
    eval: EvalSpec = EvalSpec()

    @field_validator("name")
    @classmethod
    def _directory_name(cls, v: str) -> str:
        # the default output is lake/mixtures/<name>: '.' or '..' would be mixtures/ or the lake
        if set(v) == {"."}:
            raise ValueError(
                f"{v!r} is no directory name (the default output is lake/mixtures/<name>); "
                "use letters, digits, '_', '-' and '.', not dots alone"
            )
        return v

    @field_validator("buckets")
    @classmethod
    def _bucket_names(cls, v: dict[str, BucketSpec]) -> dict[str, BucketSpec]:
        for name in v:
            if not name or "." in name or "/" in name:
                raise ValueError(
                    f"bucket name {name!r} must be non-empty and contain no '.' or '/'"
                )
        return v

    @model_validator(mode="after")
    def _weights(self) -> MixtureSpec:
        total = sum(b.weight for b in self.buckets.values())
        if abs(total - 1) > WEIGHT_EPS:
            parts = ", ".join(f"{k}={b.weight:g}" for k, b in self.buckets.items())
            raise ValueError(f"buckets: weights sum to {total:g} ({parts}); they must sum to 1")
        images = [k for k, b in self.buckets.items() if b.modality != "text"]
        if images and self.image_tokens == 0:
            raise ValueError(
                f"image_tokens: buckets {images} carry images; give the tokens per image "
                "(e.g. image_tokens: 144)"
            )
        if self.image_tokens >= self.seq_len:
            raise ValueError(
                f"image_tokens: {self.image_tokens} must be smaller than seq_len {self.seq_len} "
                "(an image block never straddles a sequence)"
            )
        last = 0.0
        for i, stage in enumerate(self.stages):
            if stage.until <= last:
                raise ValueError(
                    f"stages[{i}].until: {stage.until:g} must be greater than the previous stage's {last:g}"
                )
            last = stage.until
            unknown = sorted(set(stage.weights) - set(self.buckets))
            if unknown:
                raise ValueError(
                    f"stages[{i}].weights: unknown bucket(s) {unknown}; known: {sorted(self.buckets)}"
                )
            s = sum(self.stage_weights(stage).values())
            if abs(s - 1) > WEIGHT_EPS:
                raise ValueError(
                    f"stages[{i}] ({stage.name}): weights sum to {s:g}; they must sum to 1"
                )
        if self.stages and abs(last - 1) > WEIGHT_EPS:
            raise ValueError(f"stages: the last stage must end at until: 1.0, not {last:g}")
        return self

    def stage_weights(self, stage: StageSpec) -> dict[str, float]:
        """A stage's weight per bucket (top-level weight where the stage names none)."""
        return {k: stage.weights.get(k, b.weight) for k, b in self.buckets.items()}

    def stage_spans(self) -> list[tuple[str, float, dict[str, float]]]:
        """(name, fraction of total_tokens, bucket weights) per stage; one `main` stage if none given."""
        if not self.stages:
            return [("main", 1.0, {k: b.weight for k, b in self.buckets.items()})]
        out, start = [], 0.0
        for stage in self.stages:
            out.append((stage.name, stage.until - start, self.stage_weights(stage)))
            start = stage.until
        return out

    def effective_weights(self) -> dict[str, float]:
        """Each bucket's share of the whole run, curriculum stages included."""
        eff = dict.fromkeys(self.buckets, 0.0)
        for _, frac, weights in self.stage_spans():
            for k, w in weights.items():
                eff[k] += frac * w
        return eff

    def sha256(self) -> str:
        """Stable hash of the parsed spec."""
        data = self.model_dump(mode="json")
        tok = data.get("tokenizer")
        if isinstance(tok, dict) and tok["train"].get("sample") == "files":
            del tok["train"]["sample"]  # a spec without `sample: mixture` keeps its hash
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def resolve_path(path: str, spec_dir: Path, lake_root: Path | None = None) -> Path:
    """Resolve a spec path: `lake/...` against the lake root, absolute as is, else against spec_dir."""
    if path == "lake" or path.startswith("lake/"):
        return (lake_root or common_lake_root()) / path[len("lake/") :]
    p = Path(path)
    return p if p.is_absolute() else (spec_dir / p)


def _format_errors(source: str, exc: ValidationError) -> str:
    from common.errors import validation_problems

    return f"{source}: invalid mixture spec: {validation_problems(exc, model=MixtureSpec)}"


def parse_spec(data: Any, source: str = "<spec>") -> MixtureSpec:
    """Validate a spec given as a mapping; raise SpecError naming each bad field."""
    if not isinstance(data, dict):
        raise SpecError(
            f"{source}: a mixture spec must be a YAML mapping, got {type(data).__name__}"
        )
    try:
        return MixtureSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(_format_errors(source, exc)) from None


def load_spec(path: str | Path) -> MixtureSpec:
    """Read and validate a spec YAML file."""
    path = Path(path)
    if not path.exists():
        raise SpecError(f"{path}: spec file does not exist")
    try:
        data = yamlio.load_file(path)
    except yamlio.YamlFileError as exc:
        raise SpecError(str(exc)) from None
    return parse_spec(data, str(path))
