"""One declaration per stage: typed parameters, input and output datasets, `run`, checks.

A stage is declared once, as a `Stage`:

- `params`: a pydantic model whose fields are the stage's parameters. A field declared with
  `param(...)` carries its CLI flag, its help text and its role: an upstream dataset's path
  (`input=`), the output directory (`output=True`), a CLI-only switch (`asset=False`) or a value
  that Dagster takes from a resource (`resource=`).
- `run(params, lake) -> Summary`: the stage itself, in plain Python over lake paths. A `Summary`
  is a typed result with `.metadata()` (Dagster) and `.text()` (the terminal), and names the
  datasets it wrote (`outputs`).
- `inputs`/`outputs`: the datasets read and written (asset names), and `checks` on them.

`pipelines.cli` derives the Typer command from the declaration and `pipelines.graph` derives the
Dagster asset, its `Config`, its inputs and its checks, so adding a parameter touches one place:
the params model. Neither import of Typer nor Dagster happens here.
"""

from __future__ import annotations

import errno
import json
import os
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field

from common import lake as lake_mod

# Errors a user can fix (a missing file, a bad value): the CLI prints one line and exits 2.
USER_ERRORS: tuple[type[BaseException], ...] = (
    FileNotFoundError,
    FileExistsError,
    NotADirectoryError,
    IsADirectoryError,
    PermissionError,
    ValueError,
    KeyError,
)
# OS errors a user can fix, by errno, with the fix the one line gives: a read-only or full disk,
# a directory without permission, a file where a directory is to be (or the reverse).
USER_ERRNOS = {
    errno.EROFS: "choose a writable directory",
    errno.EACCES: "choose a writable directory (or one you may read)",
    errno.EPERM: "choose a writable directory (or one you may read)",
    errno.ENOSPC: "free some space or choose another directory",
    errno.EDQUOT: "free some space or choose another directory",
    errno.EEXIST: "a file is in the way: give a directory",
    errno.ENOTDIR: "a file is in the way: give a directory",
    errno.EISDIR: "it is a directory: give a file",
    errno.ENOENT: "check the path",
}
# Domain errors that are the user's to fix, by module (looked up only once raised, so the CLI
# never imports a heavy module just to name its error class).
USER_ERROR_CLASSES = (
    ("crawlers.crawl.config", "CrawlError"),
    ("training.trainer", "TrainError"),
    ("common.teacher", "TeacherError"),
)


def is_user_error(exc: BaseException) -> bool:
    """A missing file, a bad value, a refused crawl directory: errors the user can fix."""
    import sys

    if isinstance(exc, USER_ERRORS):
        return True
    if isinstance(exc, OSError) and exc.errno in USER_ERRNOS:
        return True
    for module, name in USER_ERROR_CLASSES:
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None and isinstance(exc, cls):
            return True
    return False


def flag_of(stage: Stage, name: str) -> str:
    return field_role(stage.params, name).get("flag") or "--" + name.replace("_", "-")


def error_line(exc: BaseException, stage: Stage | None = None) -> str:
    """One line naming the file or flag, the field and the fix."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError) and stage is not None:
        from common.errors import validation_problems

        def where(loc: list[str]) -> str:
            name = loc[0] if loc else ""
            return flag_of(stage, name) if name in stage.params.model_fields else ".".join(loc)

        return validation_problems(exc, where, model=stage.params)
    if isinstance(exc, KeyError) and exc.args:
        key = str(exc.args[0])
        if key.isidentifier():  # a bare dict/column lookup that missed: say what is missing
            return f"missing field {key!r} in the input (re-run the stage that writes it)"
        return key
    if isinstance(exc, OSError) and exc.errno in USER_ERRNOS and exc.filename is not None:
        return os_error_line(exc)
    return printable(str(exc))


def os_error_line(exc: OSError) -> str:
    """'<path>: read-only file system; choose a writable directory', the path named as the user
    gave it: REFINERY_HOME=... for a path in the lake."""
    path = Path(os.fsdecode(exc.filename))
    where = printable(str(path))
    home = os.environ.get("REFINERY_HOME")
    if home and (path == Path(home).resolve() or Path(home).resolve() in path.parents):
        where = f"{where} (in REFINERY_HOME={printable(home)})"
    what = (exc.strerror or type(exc).__name__).lower()
    return f"{where}: {what}; {USER_ERRNOS[exc.errno]}"


def printable(text: str) -> str:
    """`text` with the bytes of a non-UTF-8 file name (surrogates, as Python decodes them)
    written as \\xff escapes, so that it can be printed and logged."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeError:  # a surrogate no file name decodes to
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def trace_log(exc: BaseException, command: str = "") -> Path | None:
    """Write the exception's traceback to a log file ($REFINERY_LOG_DIR, default
    <tmp>/refinery-logs) and return its path (None when it cannot be written)."""
    import tempfile
    import time
    import traceback

    root = Path(os.environ.get("REFINERY_LOG_DIR") or Path(tempfile.gettempdir()) / "refinery-logs")
    name = "-".join(command.split()) or "refinery"
    path = root / f"{name}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}.log"
    try:
        root.mkdir(parents=True, exist_ok=True)
        text = "".join(traceback.format_exception(exc))
        path.write_text(text, encoding="utf-8", errors="backslashreplace")
    except (OSError, UnicodeError):  # an unwritable or non-UTF-8 $REFINERY_LOG_DIR
        return None
    return path


def param(
    default: Any = ...,
    *,
    flag: str | None = None,
    help: str = "",
    input: str | None = None,
    output: bool = False,
    cli: bool = True,
    asset: bool = True,
    resource: str | None = None,
    envvar: str | None = None,
    min: float | None = None,
    max: float | None = None,
    gt: float | None = None,
    finite: bool = False,
    file: bool = False,
    argument: bool = False,
    extra_args: bool = False,
) -> Any:
    """A stage parameter: a pydantic Field that also says how the CLI and Dagster fill it.

    flag: the CLI option (default `--field-name`; `--x/--no-x` for a two-way switch).
    input: the upstream dataset whose path this is (Dagster hands it in; the CLI takes the flag).
    output: the output directory (Dagster: the lake's standard place; CLI: the flag).
    cli / asset: whether the CLI / the Dagster Config show it.
    resource: `<resource>.<attribute>` whose value Dagster passes in (e.g. `beam.pipeline_args`).
    min: the smallest value: the params model refuses less (so the CLI, the Dagster config and
    a stage called from code all refuse it alike); the CLI also shows it in --help.
    max: the largest value, likewise. gt: a bound the value must exceed (a timeout: gt=0).
    finite: a float that is a number (nan and inf refused).
    file: the path names a file, not a directory (the CLI refuses a directory for it, and checks
    an output file's directory instead of the path itself).
    argument: a positional CLI argument. extra_args: unknown CLI options are collected here.
    """
    extra = {
        "flag": flag,
        "input": input,
        "output": output or None,
        "cli": cli and not extra_args,
        "asset": asset and input is None and not output and resource is None and not extra_args,
        "resource": resource,
        "envvar": envvar,
        "min": min,
        "max": max,
        "file": file or None,
        "argument": argument or None,
        "extra_args": extra_args or None,
    }
    return Field(
        default,
        description=help,
        # the params model enforces the bounds wherever the values come from (CLI, Dagster, code)
        ge=min,
        le=max,
        gt=gt,
        allow_inf_nan=False if finite else None,
        json_schema_extra={k: v for k, v in extra.items() if v is not None},
    )


def field_role(model: type[BaseModel], name: str) -> dict[str, Any]:
    """The `param(...)` extras of one field ({} for a plain pydantic field)."""
    extra = model.model_fields[name].json_schema_extra
    return dict(extra) if isinstance(extra, dict) else {"cli": True, "asset": True}


def is_list_field(model: type[BaseModel], name: str) -> bool:
    """Whether a field holds a list (`list[...]`, or a union with one: `list[Path] | None`)."""
    annotation = model.model_fields[name].annotation
    return get_origin(annotation) is list or list in map(get_origin, get_args(annotation))


def list_item_type(model: type[BaseModel], name: str) -> Any:
    """The element type of a list field (`list[float] | None` -> float), None for any other."""
    annotation = model.model_fields[name].annotation
    for t in (annotation, *get_args(annotation)):
        if get_origin(t) is list:
            return (get_args(t) or (str,))[0]
    return None


def _parses_as(token: str, kind: Any) -> bool:
    try:
        kind(token)
    except (TypeError, ValueError):
        return False
    return True


def spread_list_values(stage: Stage, args: Sequence[str]) -> list[str]:
    """The command line with each further value after a list option's flag given that flag:
    `--decontaminate e1.jsonl ev.jsonl` reads as `--decontaminate e1.jsonl --decontaminate
    ev.jsonl`, so a list option takes one or more values after one flag, and the repeated form
    reads as before. The flag's first value is the next token, whatever it is (as Click takes
    it). A further token is a value only where it can be nothing else: never an option (`-...`)
    or past `--`; for a list of numbers, a number (`--face-angles -25 25` takes both turns, a
    file name ends the list); for a list of text, any other token, unless the command takes
    positional arguments (there it stays the argument it was: `mix build --beam-arg=... SPEC`)."""
    fields = [n for n in stage.params.model_fields if field_role(stage.params, n).get("cli", True)]
    lists = {
        flag_of(stage, n): list_item_type(stage.params, n)
        for n in fields
        if not field_role(stage.params, n).get("argument") and is_list_field(stage.params, n)
    }
    positional = any(field_role(stage.params, n).get("argument") for n in fields)

    def more(token: str, kind: Any) -> bool:
        if kind in (int, float):
            return _parses_as(token, kind)
        return not token.startswith("-") and not positional

    out: list[str] = []
    rest = list(args)
    while rest:
        token = rest.pop(0)
        out.append(token)
        if token == "--":
            return out + rest
        flag, eq, _ = token.partition("=")
        if flag not in lists:
            continue
        if not eq and rest:
            out.append(rest.pop(0))
        while rest and more(rest[0], lists[flag]):
            out += [flag, rest.pop(0)]
    return out


class Params(BaseModel):
    """Base of every stage's parameters: unknown fields are an error, never ignored."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


class Summary(BaseModel):
    """Base of every stage's result. Fields are the figures; `outputs` names what was written.

    Override `text()` for a stage whose terminal output is richer than `key=value` pairs.
    Fields listed in `markdown_fields` go to Dagster as Markdown, `path` fields as paths.
    """

    model_config = ConfigDict(extra="forbid")

    outputs: dict[str, str] = Field(default_factory=dict, description="dataset -> path written")
    markdown_fields: ClassVar[tuple[str, ...]] = ()

    def metadata(self) -> dict[str, Any]:
        """Figures for Dagster: scalars as they are, dicts/lists as JSON, None left out."""
        out: dict[str, Any] = {}
        for name, value in self.model_dump(exclude={"outputs"}).items():
            if value is not None:
                out[name] = value
        return out

    def metadata_for(self, output: str, first: bool) -> dict[str, Any]:
        """The figures attached to one output's materialization (all of them on the first)."""
        return self.metadata() if first else {}

    def text(self) -> str:
        """What the CLI prints: one line of `key=value` figures unless a stage says more."""
        return self.line()

    def line(self) -> str:
        """One line of the short figures (the demo's table and the Dagster `summary` entry)."""
        short = {
            k: v
            for k, v in self.metadata().items()
            if not (isinstance(v, str) and (len(v) > 60 or "/" in v))
            and not (isinstance(v, list | dict) and len(v) > 8)
        }
        return format_figures(short)


def format_figures(figures: Mapping[str, Any]) -> str:
    """`key=value` pairs on one line; control characters (ESC, \\r, \\n: anything a stage's data
    put in a figure, such as sandbox stderr in a status) are escaped, never sent to the terminal."""
    parts = []
    for key, value in figures.items():
        if value is None or (isinstance(value, str) and "\n" in value):
            continue
        if isinstance(value, float):
            value = f"{value:.3g}"
        elif isinstance(value, list | tuple):
            value = ",".join(map(str, value))
        elif isinstance(value, dict):
            value = ",".join(
                f"{k}:{v:.3g}" if isinstance(v, float) else f"{k}:{v}" for k, v in value.items()
            )
        parts.append(_escape_controls(f"{key}={value}"))
    return "  ".join(parts)


def _escape_controls(text: str) -> str:
    """Control characters (Unicode Cc, tab kept) written as escapes: \\x1b, \\r, \\n."""
    return "".join(
        c if c == "\t" or unicodedata.category(c) != "Cc" else repr(c)[1:-1] for c in text
    )


@dataclass
class Lake:
    """What a stage's `run` gets besides its parameters: the lake root and the run's hooks."""

    root: Path = field(default_factory=lake_mod.lake_root)
    log: Callable[[str], None] = lambda msg: None
    progress: Callable[[dict[str, Any]], None] | None = None
    partition: str | None = None  # the Dagster partition key, when the asset is partitioned
    interactive: bool = False  # a terminal is watching (the CLI): stages may show progress bars

    def dir(self, stage: str) -> Path:
        """The standard directory of a stage's output (created)."""
        return lake_mod.stage_dir(stage, self.root)


@dataclass(frozen=True)
class Check:
    """A promise about a stage's outputs. `fn(summary, lake)` returns a CheckOutcome-like object
    (passed, description, metadata). Blocking checks stop the graph when they fail."""

    name: str
    asset: str
    fn: Callable[[Any, Lake], Any]
    description: str
    blocking: bool = True


@dataclass(frozen=True)
class Stage:
    """One stage of the pipeline, declared once (see the module docstring)."""

    name: str  # the CLI command path, e.g. "filter" or "mix build"
    params: type[Params]
    run: Callable[[Any, Lake], Summary]
    description: str
    outputs: Sequence[str] = ()  # asset names this stage materializes ((): CLI only)
    inputs: Sequence[str] = ()  # upstream assets (all read: a test holds every stage to it)
    group: str = ""
    checks: Sequence[Check] = ()
    partitions: Sequence[str] | None = None
    # a partitioned upstream asset whose partition k must come before this stage's partition k:
    # a Dagster dependency without a data read, so that a backfill of the upstream's partitions
    # (the UI's "Materialize all") reaches this stage across unpartitioned assets in between
    partitions_follow: str | None = None
    output_descriptions: Mapping[str, str] = field(default_factory=dict)
    asset_defaults: Mapping[str, Any] = field(default_factory=dict)  # Dagster-only defaults
    show: Callable[[Summary], None] | None = None  # richer terminal output than Summary.text()
    bind: Mapping[str, str] = field(default_factory=dict)  # params field -> upstream asset
    # outputs that depend on other outputs of the same stage, not on all its inputs
    internal_deps: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # runs Beam pipelines: launched as its own process through Dagster Pipes when the `beam`
    # resource says so (pipelines/pipes_job.py)
    beam_job: bool = False

    def input_fields(self) -> dict[str, str]:
        """params field -> upstream dataset: fields marked `input=`, and `bind`."""
        fields = {
            n: field_role(self.params, n)["input"]
            for n in self.params.model_fields
            if field_role(self.params, n).get("input")
        }
        return {**fields, **self.bind}


@dataclass(frozen=True)
class Dataset:
    """A handle to a dataset in the lake: its path and manifest, never its data."""

    name: str
    path: str
    partition: str | None = None

    def manifest(self) -> dict[str, Any]:
        try:
            return lake_mod.read_manifest(Path(self.path))
        except FileNotFoundError:
            return {}

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "path": self.path, "partition": self.partition})

    @classmethod
    def from_json(cls, text: str) -> Dataset:
        return cls(**json.loads(text))
