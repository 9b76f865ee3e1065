"""The Dagster graph, derived from the stage table (`pipelines.stages.STAGES`).

Each stage with outputs becomes one (multi-)asset: its `Config` is the stage's params minus the
fields Dagster fills itself (upstream dataset paths, the output place, resource values); its
inputs are the upstream assets, loaded by `LakeIOManager` as `Dataset` handles (path plus
manifest, never data); its outputs are handles to what the stage wrote; its checks run in the
same step and report figures as metadata. Blocking checks stop the graph when they fail.
"""

from __future__ import annotations

import inspect
import os
import time
from pathlib import Path
from typing import Any, ClassVar, get_args, get_origin

import pydantic
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetDep,
    AssetExecutionContext,
    AssetIn,
    AssetKey,
    AssetOut,
    Config,
    DagsterEventType,
    Definitions,
    Failure,
    IdentityPartitionMapping,
    MetadataValue,
    Output,
    StaticPartitionsDefinition,
    multi_asset,
)

from common.memory import PeakMemory
from pipelines.resources import HANDLES_DIR, LakeIOManager
from pipelines.stage import (
    USER_ERROR_CLASSES,
    USER_ERRORS,
    Dataset,
    Lake,
    Stage,
    Summary,
    field_role,
    is_list_field,
    is_user_error,
)


def _config_type(annotation: Any) -> Any:
    """The Dagster Config type of a params field: Path becomes str, inside Optional and lists too."""
    if annotation is Path:
        return str
    args = get_args(annotation)
    if args and Path in args:
        return (str | None) if type(None) in args else str
    if get_origin(annotation) is list and args and args[0] is Path:
        return list[str]
    return annotation


class StageConfig(Config):
    """Base of every stage's Dagster `Config`: a value its field refuses (below a param's `min`)
    fails as the run's config is read, before the stage starts, in one line naming the asset and
    the field, with the message the CLI gives for the flag."""

    asset_name: ClassVar[str] = ""

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except pydantic.ValidationError as exc:
            from common.errors import validation_problems

            raise ValueError(
                f"config of {type(self).asset_name}: {validation_problems(exc)}"
            ) from None


def config_class(
    stage: Stage, asset_name: str, overrides: dict[str, Any] | None = None
) -> type[Config]:
    """The Dagster `Config` of a stage: its params that Dagster users set (`asset=True`), with
    defaults from `overrides` (see `config_defaults`), else the stage's `asset_defaults`, and
    the params' constraints (a `min` is a `ge`)."""
    fields: dict[str, Any] = {}
    bound = stage.input_fields()
    defaults = {**stage.asset_defaults, **(overrides or {})}
    for name, info in stage.params.model_fields.items():
        if not field_role(stage.params, name).get("asset", True) or name in bound:
            continue
        default = defaults.get(name, info.default)
        if info.is_required() and name not in defaults:
            default = ...
        bounds = {}  # the params field's own limits (ge/gt/le/finite), so a launch refuses alike
        for limit in info.metadata:
            for key in ("ge", "gt", "le", "lt", "allow_inf_nan"):
                if getattr(limit, key, None) is not None:
                    bounds[key] = getattr(limit, key)
        if "ge" not in bounds and field_role(stage.params, name).get("min") is not None:
            bounds["ge"] = field_role(stage.params, name)["min"]
        fields[name] = (
            _config_type(info.annotation),
            pydantic.Field(default, description=info.description, **bounds),
        )
    cls_name = "".join(w.title() for w in asset_name.split("_")) + "Config"
    cls = pydantic.create_model(cls_name, __base__=StageConfig, __doc__=stage.description, **fields)
    cls.asset_name = asset_name
    return cls


def _kind(key: str, value: Any, markdown: tuple[str, ...]) -> str:
    """The metadata type of one figure: md, json, path, or raw (bool/int/float/str as they are)."""
    if key in markdown:
        return "md"
    if isinstance(value, dict | list | tuple):
        return "json"
    if isinstance(value, Path):
        return "path"
    return "raw"


def typed_metadata(values: dict[str, Any], markdown: tuple[str, ...]) -> dict[str, tuple[str, Any]]:
    """Figures as (type, JSON-able value) pairs: the same for an in-process step and a Pipes job."""
    out: dict[str, tuple[str, Any]] = {}
    for key, value in values.items():
        kind = _kind(key, value, markdown)
        if kind == "md" or kind == "path":
            value = str(value)
        elif kind == "raw" and not isinstance(value, bool | int | float | str):
            value = str(value)
        out[key] = (kind, value)
    return out


def _metadata_values(typed: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    makers = {"md": MetadataValue.md, "json": MetadataValue.json, "path": MetadataValue.path}
    return {k: makers[kind](v) if kind in makers else v for k, (kind, v) in typed.items()}


def _metadata(values: dict[str, Any], markdown: tuple[str, ...]) -> dict[str, Any]:
    return _metadata_values(typed_metadata(values, markdown))


def stage_results(stage: Stage, summary: Summary, lake: Lake, seconds: float, peak: PeakMemory):
    """What a finished stage reports: per output (name, path, typed metadata), and each check
    with its outcome. The in-process step and the Pipes job (`pipelines.pipes_job`) share it."""
    outputs = []
    for out in stage.outputs:
        path = summary.outputs.get(out)
        if path is None:
            raise RuntimeError(f"stage {stage.name} did not report output {out}")
        meta: dict[str, tuple[str, Any]] = {
            "path": ("path", str(path)),
            "summary": ("raw", summary.line()),
            "seconds": ("raw", seconds),
            "peak_memory_mib": ("raw", peak.mib),
        }
        figures = summary.metadata_for(out, out == stage.outputs[0])
        meta.update(typed_metadata(figures, summary.markdown_fields))
        outputs.append((out, str(path), meta))
    checks = [(check, check.fn(summary, lake)) for check in stage.checks]
    return outputs, checks


def _user_failure(asset_name: str, exc: BaseException) -> Failure:
    """A stage's user error (a bad file or value) as the step's failure: one line naming the
    asset, the file or field and the fix, as the CLI prints it, with the traceback in a log
    file (`pipelines.stage.trace_log`) rather than a stack of Dagster frames in front of it."""
    from pipelines.stage import error_line, trace_log

    line = " ".join(error_line(exc).split()) or type(exc).__name__
    log = trace_log(exc, asset_name)
    where = f" (trace: {log})" if log is not None else ""
    return Failure(description=f"{asset_name}: {line}{where}")


def _user_error_names() -> set[str]:
    """Class names of the user errors (`pipelines.stage.is_user_error`), subclasses loaded in
    this process included: a Pipes job's exception arrives as its class name and message."""
    names = {name for _, name in USER_ERROR_CLASSES}
    todo = list(USER_ERRORS)
    while todo:
        cls = todo.pop()
        if cls.__name__ not in names:
            names.add(cls.__name__)
            todo.extend(cls.__subclasses__())
    return names


def _pipes_user_error(context: AssetExecutionContext) -> str | None:
    """The one line of the user error a failed Pipes job of this step closed with (read from
    the run's event log, where Dagster records it with its traceback), or None."""
    records = context.instance.all_logs(context.run.run_id, of_type=DagsterEventType.ENGINE_EVENT)
    step = context.op_execution_context.get_step_execution_context().step.key
    for record in reversed(records):
        event = record.dagster_event
        error = getattr(event.engine_event_data, "error", None) if event else None
        if (
            error is None
            or record.step_key != step
            or "closed with exception" not in (event.message or "")
        ):
            continue
        if error.cls_name not in _user_error_names():
            return None
        line = " ".join(error.message.split()).removeprefix(f"{error.cls_name}: ")
        return line or error.cls_name
    return None


def _run_via_pipes(
    context: AssetExecutionContext, stage: Stage, values: dict, lake: Lake, asset_name: str
):
    """Run the stage as its own process through Dagster Pipes (`pipelines.pipes_job`): the job
    reports each output's metadata and each check back with `dagster_pipes`, exactly as a job on
    a remote Beam runner's launcher would; the outputs become lake handles here."""
    import json
    import sys

    from dagster import PipesSubprocessClient
    from dagster._core.errors import DagsterPipesExecutionError

    extras = {
        "stage": stage.name,
        "params": json.loads(json.dumps(values, default=str)),
        "lake": str(lake.root),
        "partition": lake.partition,
    }
    try:
        invocation = PipesSubprocessClient().run(
            command=[sys.executable, "-m", "pipelines.pipes_job"], context=context, extras=extras
        )
    except DagsterPipesExecutionError:
        line = _pipes_user_error(context)
        if line is None:
            raise
        trace = "the step's '[pipes] external process pipes closed with exception' event"
        raise Failure(description=f"{asset_name}: {line} (trace: {trace})") from None
    for result in invocation.get_results():
        if isinstance(result, AssetCheckResult):
            yield result
            continue
        out = result.asset_key.path[-1]
        meta = dict(result.metadata or {})
        path = meta["path"].value if hasattr(meta["path"], "value") else meta["path"]
        yield Output(Dataset(out, str(path), lake.partition), output_name=out, metadata=meta)


def stage_asset(stage: Stage, name: str | None = None, defaults: dict[str, Any] | None = None):
    """The Dagster multi-asset of one stage (named after its only output, or `name`); `defaults`
    replace config defaults of its fields (see `config_defaults`)."""
    op_name = name or (
        stage.outputs[0] if len(stage.outputs) == 1 else stage.name.replace(" ", "_")
    )
    partitions = StaticPartitionsDefinition(list(stage.partitions)) if stage.partitions else None
    ins = {_arg(up): AssetIn(key=up) for up in stage.inputs}
    outs = {
        out: AssetOut(
            description=stage.output_descriptions.get(out, stage.description),
            group_name=stage.group or None,
            io_manager_key="io_manager",
        )
        for out in stage.outputs
    }
    check_specs = [
        AssetCheckSpec(c.name, asset=c.asset, description=c.description, blocking=c.blocking)
        for c in stage.checks
    ]
    config_cls = config_class(stage, op_name, defaults)
    bound = stage.input_fields()  # params field -> upstream asset

    def compute(context: AssetExecutionContext, config, **inputs: Dataset):
        res = context.resources
        lake = Lake(
            root=res.lake.path(),
            log=context.log.info,
            partition=context.partition_key if partitions else None,
        )
        values = config.model_dump()
        for field_name, upstream in bound.items():
            path = inputs[_arg(upstream)].path
            values[field_name] = [path] if is_list_field(stage.params, field_name) else path
        for field_name in stage.params.model_fields:
            source = field_role(stage.params, field_name).get("resource")
            if source:
                resource_name, attr = source.split(".", 1)
                resource = getattr(res, resource_name)
                check = getattr(resource, f"check_{attr}", None)
                if check is not None:  # e.g. the beam resource's options, against Beam's parser
                    check()
                value = getattr(resource, attr)
                values[field_name] = value() if callable(value) else value
        if stage.beam_job and res.beam.launch_via_pipes:
            yield from _run_via_pipes(context, stage, values, lake, op_name)
            return
        started = time.perf_counter()
        try:
            with PeakMemory() as peak:
                summary: Summary = stage.run(stage.params(**values), lake)
        except Exception as exc:
            if not is_user_error(exc):
                raise
            raise _user_failure(op_name, exc) from None
        seconds = round(time.perf_counter() - started, 2)
        outputs, checks = stage_results(stage, summary, lake, seconds, peak)
        for out, path, meta in outputs:
            handle = Dataset(out, path, lake.partition)
            yield Output(handle, output_name=out, metadata=_metadata_values(meta))
        for check, outcome in checks:
            yield AssetCheckResult(
                asset_key=check.asset,
                check_name=check.name,
                passed=bool(outcome.passed),
                severity=AssetCheckSeverity.ERROR,
                description=outcome.description,
                metadata=_metadata(dict(outcome.metadata), ()),
            )

    params = [
        inspect.Parameter(
            "context", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=AssetExecutionContext
        ),
        inspect.Parameter("config", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=config_cls),
    ] + [
        inspect.Parameter(arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Dataset)
        for arg in ins
    ]
    compute.__signature__ = inspect.Signature(params)
    compute.__name__ = op_name
    compute.__doc__ = stage.description
    internal = None
    if stage.internal_deps:
        internal = {
            out: {AssetKey(d) for d in stage.internal_deps.get(out, stage.inputs)}
            for out in stage.outputs
        }
    follow = IdentityPartitionMapping() if partitions else None
    return multi_asset(
        name=op_name,
        internal_asset_deps=internal,
        outs=outs,
        ins=ins,
        # an unpartitioned stage follows every partition of its upstream (Dagster's default)
        deps=[AssetDep(stage.partitions_follow, partition_mapping=follow)]
        if stage.partitions_follow
        else None,
        check_specs=check_specs or None,
        partitions_def=partitions,
        required_resource_keys={"lake", "beam", "browser", "teacher"},
        description=stage.description,
        can_subset=False,
    )(compute)


def _arg(asset_name: str) -> str:
    return f"in_{asset_name}"


def build_definitions(env: str | None = None, root: str | Path | None = None) -> Definitions:
    """Every asset and check of the stage table, with the resources of one environment
    (`root` overrides the local lake root)."""
    from pipelines.resources import resources_for
    from pipelines.sensors import (
        consent_recheck_sensor,
        downloader_config,
        recrawl_job,
        recrawl_schedules,
    )
    from pipelines.stages import STAGES

    defaults = config_defaults([s for s in STAGES if s.outputs])
    assets = [stage_asset(s, defaults=defaults.get(s.outputs)) for s in STAGES if s.outputs]
    fetch = downloader_config(defaults.get(("raw_pages",)))  # robots rechecks and recrawls
    return Definitions(
        assets=assets,
        resources=resources_for(env, root),
        jobs=[recrawl_job],
        sensors=[consent_recheck_sensor(fetch)],
        schedules=recrawl_schedules(fetch),
        executor=executor_for(env),
    )


def executor_for(env: str | None = None):
    """How a run launched from the UI executes its steps. local: one after another in the run's
    process (Dagster's in-process executor). Every step is CPU-bound or drives a pool of its own
    (the crawl, Beam, Chromium, the trainer's threads), the instance already runs two runs at
    once (dagster_home/dagster.yaml), and Dagster's default, a process per step, pays for
    importing Dagster, torch and Beam again for each of the graph's thirty-odd steps. cluster:
    Dagster's default (multiprocess), for deployments whose steps have machines of their own."""
    from dagster import in_process_executor, multiprocess_executor

    env = env or os.environ.get("REFINERY_ENV") or "local"
    return in_process_executor if env == "local" else multiprocess_executor


CONFIG_DEFAULTS_ENV = "REFINERY_ASSET_CONFIG"


def config_defaults(stages: list[Stage]) -> dict[tuple[str, ...], dict[str, Any]]:
    """Config defaults per stage (keyed by its outputs) from the YAML or JSON file named by
    $REFINERY_ASSET_CONFIG: `{asset name: {config field: value}}`, e.g. `{raw_pages: {seeds:
    [...]}, cpt_model: {steps: 6}}`. Launches that bring no run config, such as "Materialize
    all" and backfills from the Dagster UI, use these values; run config given at launch still
    wins. Unset: no overrides."""
    import os

    from common import yamlio

    path = os.environ.get(CONFIG_DEFAULTS_ENV, "").strip()
    if not path:
        return {}
    try:
        data = yamlio.load_file(path) or {}
    except OSError as exc:
        raise ValueError(f"{CONFIG_DEFAULTS_ENV}={path}: cannot read it ({exc})") from None
    except yamlio.YamlFileError as exc:  # names the file, the byte or line, and the fix
        raise ValueError(f"{CONFIG_DEFAULTS_ENV}={exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of asset name to config fields")
    by_name = {n: s for s in stages for n in s.outputs}
    out: dict[tuple[str, ...], dict[str, Any]] = {}
    for name, fields in data.items():
        stage = by_name.get(name)
        if stage is None:
            raise ValueError(
                f"{path}: {name!r} is not an asset; use one of {', '.join(sorted(by_name))}"
            )
        model_fields = config_class(stage, name).model_fields
        settable = set(model_fields)
        if not isinstance(fields, dict):
            raise ValueError(
                f"{path}: {name}: expected a mapping of config fields ({name}: {{field: value}}), "
                f"got {fields!r}; use some of {', '.join(sorted(settable))}"
            )
        if set(fields) - settable:
            raise ValueError(
                f"{path}: {name}: {sorted(set(fields) - settable)!r} are not config fields; use "
                f"some of {', '.join(sorted(settable))}"
            )
        out.setdefault(stage.outputs, {}).update(
            {k: _field_value(path, name, k, model_fields[k], v) for k, v in fields.items()}
        )
    return out


def _field_value(
    path: str, asset_name: str, key: str, info: pydantic.fields.FieldInfo, value: Any
) -> Any:
    """A config default as its field's type: the file is read with YAML 1.2's booleans (only
    true and false), so `resume: yes` arrives as "yes", which Dagster's Bool would refuse; a
    value of the wrong type, or below the field's minimum, is one line naming the file, the
    field and what it takes."""
    from typing import Annotated

    annotation = Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
    try:
        return pydantic.TypeAdapter(annotation).validate_python(value)
    except pydantic.ValidationError as exc:
        raise ValueError(
            f"{path}: {asset_name}.{key}: {exc.errors()[0]['msg']} (got {value!r})"
        ) from None


def asset(name: str):
    """The assets definition that materializes `name` (for `dagster.materialize` in tests)."""
    from pipelines.stages import STAGES

    for stage in STAGES:
        if name in stage.outputs:
            return stage_asset(stage)
    raise KeyError(f"no stage materializes asset {name!r}")


def materialize_selection(
    selection: list[str],
    root: str | Path,
    *,
    resources: dict[str, Any] | None = None,
    **kwargs: Any,
):
    """`dagster.materialize` of some assets of the graph in the local environment with the lake
    at `root`; upstream assets outside the selection are loaded from the lake by the IO manager.
    `resources` override single resources; other keyword arguments go to `materialize`."""
    from dagster import materialize

    defs = build_definitions("local", root=root)
    return materialize(
        list(defs.assets),
        selection=selection,
        resources={**defs.resources, **(resources or {})},
        **kwargs,
    )


def dataset_inputs(path: str | Path) -> set[str]:
    """Every input recorded by the manifests of a dataset (a file, or a directory's manifest.json,
    or the manifests of the files in it)."""
    import json

    from common.lake import manifest_path

    p = Path(path)
    if p.is_file() or (p / "manifest.json").exists():
        files = [manifest_path(p)]
    else:
        files = sorted(p.glob("*.manifest.json"))
    return {
        str(i) for f in files if f.exists() for i in json.loads(f.read_text()).get("inputs", [])
    }


def lineage_gaps(root: str | Path) -> dict[str, list[str]]:
    """For each materialized asset, the upstream assets whose datasets its manifests do not name
    as inputs (an empty dict: every asset read every one of its upstream datasets). A stage's
    `partitions_follow` upstream is an ordering, not a read, and is not asked for."""
    from pipelines.stages import STAGES

    follows = {o: s.partitions_follow for s in STAGES for o in s.outputs if s.partitions_follow}
    defs = build_definitions("local", root=root)
    graph = defs.resolve_asset_graph()
    io = LakeIOManager(root=str(root))

    def paths(key) -> list[str]:
        """The handle paths of an asset: one, or one per materialized partition."""
        name = key.to_user_string()
        files = [io._file(name, None)] + sorted((io._root() / HANDLES_DIR / name).glob("*.json"))
        return [io.read_handle(f).path for f in files if f.exists()]

    gaps: dict[str, list[str]] = {}
    for key in graph.toposorted_asset_keys:
        mine = paths(key)
        if not mine:
            continue
        read = set().union(*(dataset_inputs(p) for p in mine))
        missing = []
        for parent in sorted(graph.get(key).parent_keys, key=lambda k: k.to_user_string()):
            if parent.to_user_string() == follows.get(key.to_user_string()):
                continue  # a partition-order dependency, not a data read
            ups = paths(parent)
            # an input names the dataset, a file in it, or a directory holding it
            if not any(
                i == u or i.startswith(u + "/") or u.startswith(i + "/") for i in read for u in ups
            ):
                missing.append(parent.to_user_string())
        if missing:
            gaps[key.to_user_string()] = missing
    return gaps
