"""The `refinery` command line, derived from the stage table (`pipelines.stages.STAGES`).

Each stage's Typer command is built from its params model (`command_for`): one option per
field, the flag and help declared on the field. Heavy imports stay inside the stages' `run`,
so `refinery --help` is fast. Every command treats user errors alike (`user_errors`, and
`usage_errors` for a command line the parser refuses): one line on stderr naming the file or
flag and the fix, exit status 2.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from typer._click.exceptions import (
    BadParameter,
    MissingParameter,
    NoArgsIsHelpError,
    NoSuchOption,
    UsageError,
)
from typer.core import TyperCommand, TyperGroup

from common.lake import check_directory, check_writable
from pipelines.stage import (
    Lake,
    Stage,
    error_line,
    field_role,
    flag_of,
    is_list_field,
    is_user_error,
    printable,
    spread_list_values,
    trace_log,
)


def usage_line(exc: UsageError) -> str:
    """One line for a usage error of the command line parser (a mistyped flag, a bad value, a
    missing argument): the flag or argument, the closest flag when there is one, the fix."""
    words = exc.ctx.command_path.split()[1:] if exc.ctx is not None else []
    command = " ".join(["refinery", *words])
    if isinstance(exc, NoSuchOption):
        close = " or ".join(sorted(exc.possibilities or ()))
        hint = f"did you mean {close}? " if close else ""
        line = f"unknown option {exc.option_name}: `{command}` does not take it ({hint}see --help)"
    elif isinstance(exc, BadParameter) and not isinstance(exc, MissingParameter) and exc.param:
        # as a value the params model refuses (`pipelines.stage.error_line`): `--steps: ...`
        param = exc.param
        name = param.opts[0] if param.param_type_name == "option" else param.name.upper()
        line = f"{name}: {exc.message} (see `{command} --help`)"
    else:
        line = f"{exc.format_message()} (see `{command} --help`)"
    return " ".join(line.split())


@contextlib.contextmanager
def usage_errors() -> Iterator[None]:
    """Usage errors as every other user error (`user_errors`): one line naming the flag and the
    fix, and the log file that holds the traceback; exit status 2 (Click's usage box of four
    lines otherwise). A command group's help when it is given no command stays as it is."""
    try:
        yield
    except NoArgsIsHelpError:
        raise
    except UsageError as exc:
        words = exc.ctx.command_path.split()[1:] if exc.ctx is not None else []
        log = trace_log(exc, " ".join(words))
        where = f" (trace: {log})" if log is not None else ""
        typer.secho(printable(f"error: {usage_line(exc)}{where}"), fg="red", err=True)
        raise typer.Exit(2) from exc


class RefineryGroup(TyperGroup):
    """The `refinery` command group: the command lines it and every command under it fail to
    parse are reported by `usage_errors`."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any
    ) -> Any:
        with usage_errors():
            return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: Any) -> Any:
        with usage_errors():
            return super().invoke(ctx)


app = typer.Typer(
    name="refinery",
    cls=RefineryGroup,
    help="Refinery: build LLM pretraining data and run the training that consumes it.",
    no_args_is_help=True,
    add_completion=False,
    # Rich's traceback rendering of a deep Dagster/Beam stack took over 20 minutes on a failed
    # demo (py-spy: rich/traceback.py Traceback.extract): plain tracebacks only
    pretty_exceptions_enable=False,
)
PROJECT_ROOT = Path(__file__).resolve().parents[1]


def user_errors(fn: Callable[..., Any], stage: Stage | None = None) -> Callable[..., Any]:
    """Every command treats errors alike: one red line on stderr naming the file or flag, the
    field and the fix, and the log file that holds the traceback. A user error (a bad file or
    value) exits with status 2; an unexpected error (a bug) with status 1, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            user = is_user_error(exc)
            line = error_line(exc, stage) if user else f"{type(exc).__name__}: {exc}"
            line = " ".join(line.split()) or type(exc).__name__
            log = trace_log(exc, stage.name if stage is not None else fn.__name__)
            where = f" (trace: {log})" if log is not None else ""
            if not user:
                where = f" (unexpected error{'; trace: ' + str(log) if log else ''})"
            typer.secho(printable(f"error: {line}{where}"), fg="red", err=True)
            raise typer.Exit(2 if user else 1) from exc

    return wrapper


def _option(stage: Stage, name: str) -> tuple[Any, Any]:
    """(annotation, default) of one CLI parameter."""
    info = stage.params.model_fields[name]
    role = field_role(stage.params, name)
    kwargs: dict[str, Any] = {"help": info.description or None}
    for bound in ("min", "max"):
        if role.get(bound) is not None:
            kwargs[bound] = role[bound]
    if role.get("argument"):
        marker = typer.Argument(**kwargs)
    else:
        if role.get("envvar"):
            kwargs["envvar"] = role["envvar"]
        marker = typer.Option(flag_of(stage, name), **kwargs)
    default = (
        inspect.Parameter.empty
        if info.is_required()
        else info.get_default(call_default_factory=True)
    )
    return Annotated[info.annotation, marker], default


def _given(ctx: typer.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    # Typer vendors its own click: compare the enum by name, not by class.
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def command_for(stage: Stage, show: Callable[[Any], None] | None = None) -> Callable[..., None]:
    """The Typer command of a stage: one option per params field (`cli=True`).

    Only the flags given on the command line are passed to the params model, so
    `params.model_fields_set` tells a stage which values the user chose (a config file may
    fill the rest). Unknown options go to the field marked `extra_args`, if any.
    """
    names = [n for n in stage.params.model_fields if field_role(stage.params, n).get("cli", True)]
    io = ("input", "output", "argument")
    names.sort(key=lambda n: not any(field_role(stage.params, n).get(k) for k in io))
    extra = [n for n in stage.params.model_fields if field_role(stage.params, n).get("extra_args")]
    # list-valued positional arguments (e.g. `import warc FILE...`)
    spread = [
        n
        for n in names
        if field_role(stage.params, n).get("argument") and is_list_field(stage.params, n)
    ]
    single = [n for n in names if field_role(stage.params, n).get("argument") and n not in spread]

    def command(ctx: typer.Context, **kwargs: Any) -> None:
        values = {k: v for k, v in kwargs.items() if _given(ctx, k)}
        if extra:
            args = list(ctx.args)
            for name in spread:  # a variadic argument also took the options nobody declares
                if values.get(name):
                    moved, values[name] = _beam().split_options(values[name])
                    args += moved
            if single:
                args = _fill_arguments(stage, single, values, args)
            _check_extra(stage, args)
            values[extra[0]] = args
        params = stage.params(**values)
        _check_paths(stage, params, values)
        summary = stage.run(params, Lake(interactive=True))
        (show or stage.show or (lambda s: typer.echo(s.text())))(summary)

    params = [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    ]
    for name in names:
        annotation, default = _option(stage, name)
        params.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
            )
        )
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__doc__ = stage.description
    command.__name__ = stage.name.replace(" ", "_").replace("-", "_")
    return user_errors(command, stage)


def _check_paths(stage: Stage, params: Any, given: dict[str, Any]) -> None:
    """Refuse, before the stage runs, a path given on the command line that it cannot use: a
    name that is not UTF-8 (the lake's manifests and Parquet columns are UTF-8), a file where
    the output directory is to be, an output directory that cannot be written, a directory
    given for a config file."""
    for name, value in given.items():
        paths = value if isinstance(value, list) else [value]
        for path in paths:
            if isinstance(path, Path):
                _check_utf8(path, flag_of(stage, name))
    for name in stage.params.model_fields:
        path = getattr(params, name)
        if not isinstance(path, Path):
            continue
        flag, role = flag_of(stage, name), field_role(stage.params, name)
        if role.get("file") and path.is_dir():
            raise IsADirectoryError(f"{flag} {path}: is a directory; give a file")
        if role.get("output"):
            directory = path.parent if role.get("file") else path
            check_directory(directory, flag)
            check_writable(directory, flag)


def _check_utf8(path: Path, flag: str) -> None:
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{flag} {path}: not a UTF-8 path; rename it") from None


def _beam():
    """`pipelines.beam.fs`, imported quietly (Beam's import warns of Google Cloud clients it
    lacks, a line above the command's own)."""
    import logging

    level = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        from pipelines.beam import fs
    finally:
        logging.disable(level)
    return fs


def _fill_arguments(
    stage: Stage, names: list[str], values: dict[str, Any], args: list[str]
) -> list[str]:
    """The undeclared options, with each positional argument (`names`, in order) set from the
    tokens that are not options: the command line parser gives an argument the first token it
    does not know, so `mix build --direct_num_workers=2 SPEC` had put the Beam option in SPEC."""
    given = [str(values[n]) for n in names if n in values]
    options, rest = _beam().split_options([*given, *args])
    for name in names:
        if rest:
            values[name] = rest.pop(0)
        elif name in values or stage.params.model_fields[name].is_required():
            raise ValueError(
                f"missing argument {name.upper()}: `refinery {stage.name}` takes it besides "
                "its options (see --help)"
            )
    return options + rest


def _check_extra(stage: Stage, args: list[str]) -> None:
    """Options the stage does not declare go to Beam; one Beam does not know either is refused
    (Beam would drop it with a warning and the job would run without it: a mistyped
    `--allow-private-networks` or `--max-images`), naming the closest flag of either."""
    if not args:
        return
    bad = _beam().unknown_option(args, [flag_of(stage, n) for n in stage.params.model_fields])
    if bad is None:
        return
    name, close = bad
    if not name.startswith("-"):
        fields = stage.params.model_fields
        takes = [n.upper() for n in fields if field_role(stage.params, n).get("argument")]
        what = f"argument but {' '.join(takes)}" if takes else "arguments here"
        raise ValueError(
            f"unexpected argument {name!r}: `refinery {stage.name}` takes no positional {what}; "
            "pass inputs with their flags (see --help)"
        )
    hint = f"did you mean {close}? " if close else ""
    raise ValueError(
        f"unknown option {name}: neither `refinery {stage.name}` nor Beam's pipeline options "
        f"take it ({hint}see --help; options the stage does not declare go to Beam)"
    )


class RefineryCommand(TyperCommand):
    """A command whose usage errors all name it (an option without its value is reported by
    Click's parser without the command's context), for `usage_errors`."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except UsageError as exc:
            exc.ctx = exc.ctx or ctx
            raise


class StageCommand(RefineryCommand):
    """A stage's Click command: a list option takes one or more values after one flag
    (`--decontaminate A B`; `pipelines.stage.spread_list_values`), the repeated form as before."""

    stage: Stage

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, spread_list_values(self.stage, args))


def add_stage_commands(app: typer.Typer, stages: list[Stage], groups: dict[str, str]) -> None:
    """Register every stage that has a CLI name; `groups` gives the help of command groups."""
    subs: dict[str, typer.Typer] = {}
    for stage in stages:
        if not stage.name:
            continue
        *group, leaf = stage.name.split()
        target = app
        if group:
            key = group[0]
            if key not in subs:
                subs[key] = typer.Typer(help=groups.get(key, ""), no_args_is_help=True)
            target = subs[key]
        settings = {}
        if any(field_role(stage.params, n).get("extra_args") for n in stage.params.model_fields):
            settings = {"allow_extra_args": True, "ignore_unknown_options": True}
        cls = type("StageCommand", (StageCommand,), {"stage": stage})
        target.command(leaf, cls=cls, context_settings=settings or None)(command_for(stage))
    for key, sub in subs.items():
        app.add_typer(sub, name=key)


def demo(
    lake_dir: Annotated[
        Path | None, typer.Option("--lake", help="Lake root (default: $REFINERY_HOME or ./lake).")
    ] = None,
    train_steps: Annotated[
        str | None,
        typer.Option(
            help="Training steps as PRETRAIN,CPT,MULTIMODAL,LONG (default 300,100,100,60, the "
            "demo's); PRETRAIN,CPT,LONG keeps multimodal at its default."
        ),
    ] = None,
) -> None:
    """Serve the sample web on loopback and materialize the whole asset graph on it with Dagster."""
    from pipelines.demo import run_demo

    steps = None
    if train_steps:
        try:
            steps = tuple(int(x) for x in train_steps.split(","))
            if len(steps) not in (3, 4) or any(n <= 0 for n in steps):
                raise ValueError
        except ValueError:
            raise ValueError(
                f"--train-steps {train_steps!r}: four positive integers PRETRAIN,CPT,MULTIMODAL,"
                "LONG (e.g. 300,100,100,100), or three PRETRAIN,CPT,LONG"
            ) from None
    from pipelines.demo import DemoFailed

    if lake_dir is not None:
        check_directory(lake_dir, "--lake")
        check_writable(lake_dir, "--lake")
    try:
        run_demo(lake_dir.resolve() if lake_dir else None, train_steps=steps)
    except DemoFailed as failed:
        for line in failed.lines:
            typer.secho(line, fg="red", err=True)
        raise SystemExit(1) from None  # not an Exception: the error wrapper leaves it alone


def ui(
    host: Annotated[str, typer.Option(help="Address the webserver binds.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port of the webserver.")] = 3000,
    dagster_home: Annotated[
        Path | None,
        typer.Option(
            help="DAGSTER_HOME to use (default: $DAGSTER_HOME, else the project's dagster_home/)."
        ),
    ] = None,
) -> None:
    """Start `dagster dev` (webserver + daemon) on $DAGSTER_HOME (default: dagster_home/), where
    `refinery demo` records its runs, and the project's workspace."""
    import subprocess
    import sys

    from pipelines.demo import prepare_dagster_home

    home = prepare_dagster_home(dagster_home)
    env = dict(os.environ, DAGSTER_HOME=str(home))
    dagster = Path(sys.executable).with_name("dagster")
    workspace = PROJECT_ROOT / "dagster_home" / "workspace.yaml"
    cmd = [str(dagster), "dev", "-w", str(workspace), "-h", host]
    code = subprocess.call([*cmd, "-p", str(port)], env=env, cwd=PROJECT_ROOT)
    raise SystemExit(code)  # not an Exception: the error wrapper leaves it alone


def _register_all() -> None:
    from pipelines.stages import GROUPS, STAGES

    add_stage_commands(app, STAGES, GROUPS)
    app.command("demo", cls=RefineryCommand)(user_errors(demo))
    app.command("ui", cls=RefineryCommand)(user_errors(ui))


_register_all()


def main() -> None:
    """Entry point of the `refinery` console script."""
    app()


if __name__ == "__main__":  # `python -m pipelines.cli` (e.g. under torchrun -m)
    main()
