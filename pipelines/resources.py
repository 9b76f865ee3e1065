"""Dagster resources: typed, configurable objects picked per environment."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dagster import ConfigurableIOManager, ConfigurableResource, EnvVar, InputContext, OutputContext

from common import lake
from pipelines.stage import Dataset


class LakeResource(ConfigurableResource):
    """Where the lake lives; empty root means $REFINERY_HOME or ./lake."""

    root: str = ""

    def path(self) -> Path:
        return Path(self.root).resolve() if self.root else lake.lake_root()

    def stage_dir(self, stage: str) -> Path:
        return lake.stage_dir(stage, self.path())


class BeamRunnerResource(ConfigurableResource):
    """Which Beam runner executes batch pipelines, and its options (e.g. --job_endpoint=...)."""

    runner: str = "DirectRunner"
    options: list[str] = []
    # How stages that run Beam jobs are launched: "in_process", "pipes" (their own process via
    # Dagster Pipes, reporting back with dagster_pipes), or "auto": pipes unless the runner is the
    # in-process DirectRunner with no options (the demo's fast default).
    launch: str = "auto"

    @property
    def launch_via_pipes(self) -> bool:
        if self.launch not in ("auto", "in_process", "pipes"):
            raise ValueError(
                f"beam resource: launch={self.launch!r}; use auto, in_process or pipes"
            )
        if self.launch == "auto":
            return self.runner_or_none is not None
        return self.launch == "pipes"

    @property
    def runner_or_none(self) -> str | None:
        """The runner for stages that run in process unless given one (DirectRunner: in process)."""
        return None if self.runner == "DirectRunner" and not self.options else self.runner

    def pipeline_args(self) -> list[str]:
        return [f"--runner={self.runner}", *self.options]

    def check_options(self) -> None:
        """Refuse an option Beam's pipeline options do not take (Beam would drop it with a
        warning and the job would run without it), naming the closest one."""
        if not self.options:
            return
        from pipelines.beam.fs import unknown_option

        bad = unknown_option(self.options)
        if bad is not None:
            name, close = bad
            hint = f"did you mean {close}? " if close else ""
            raise ValueError(
                f"beam resource: options: unknown option {name} ({hint}Beam's pipeline options "
                "do not take it); fix the resource's options or $REFINERY_BEAM_OPTIONS"
            )


class BrowserResource(ConfigurableResource):
    """The headless browser used for rendering: executable (found automatically) and pages in flight."""

    executable_path: str = ""
    pages_in_flight: int = 4
    page_timeout_s: float = 20.0

    @property
    def executable_or_none(self) -> str | None:
        return self.executable_path or None


class TeacherResource(ConfigurableResource):
    """An OpenAI-compatible chat endpoint used as teacher/grader. Empty base_url means disabled."""

    base_url: str = ""
    model: str = ""
    api_key_env: str = "REFINERY_TEACHER_API_KEY"

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env)


HANDLES_DIR = "_handles"


class LakeIOManager(ConfigurableIOManager):
    """Stores and hands out `Dataset` handles: `<lake>/_handles/<asset>[/<partition>].json`."""

    root: str = ""

    def _root(self) -> Path:
        from common import lake

        return Path(self.root).resolve() if self.root else lake.lake_root()

    def _file(self, asset: str, partition: str | None) -> Path:
        base = self._root() / HANDLES_DIR / asset
        return base / f"{partition}.json" if partition is not None else base.with_suffix(".json")

    def _standard(self, asset: str, handle: Path) -> Dataset:
        """No handle: the dataset at the lake's standard place (written by the CLI), if any."""
        from common import lake

        rel = lake.DATASETS.get(asset)
        if rel is None or not (self._root() / rel).exists():
            raise FileNotFoundError(
                f"{handle}: no handle for {asset}, and nothing at its standard lake place "
                f"{self._root() / (rel or asset)}; materialize {asset} first"
            )
        path = self._root() / rel
        if (path / "latest.json").exists():  # versioned runs: the newest finished one
            from training.runs import latest_run

            path = latest_run(path) or path
        return Dataset(asset, str(path))

    def _stored_path(self, path: str) -> str:
        """A handle's path as stored: relative to the lake root when inside it, so a copied or
        moved lake hands out its own datasets; absolute (or a URL) when outside it."""
        if "://" in path:
            return path
        full = Path(path).absolute()
        try:
            return full.relative_to(self._root()).as_posix() or "."
        except ValueError:
            return str(full)

    def read_handle(self, file: Path) -> Dataset:
        """The handle stored in `file`, its path resolved against this lake's root. A stored
        absolute path that is gone (a handle written before the lake was moved, or a dataset
        deleted since) is refused in one line naming the handle file and the fix."""
        handle = Dataset.from_json(file.read_text())
        if "://" in handle.path:
            return handle
        path = Path(handle.path)
        if not path.is_absolute():
            return Dataset(handle.name, str(self._root() / path), handle.partition)
        if not path.exists():
            raise FileNotFoundError(
                f"{file}: handle of {handle.name} names {path}, which does not exist (the lake "
                f"was moved, or the dataset deleted); re-materialize {handle.name}, or delete "
                f"{self._root() / HANDLES_DIR} to read the datasets at their standard lake places"
            )
        return handle

    def handle_output(self, context: OutputContext, obj: Dataset) -> None:
        asset = context.asset_key.to_user_string()
        partition = context.partition_key if context.has_asset_partitions else None
        path = self._file(asset, partition)
        path.parent.mkdir(parents=True, exist_ok=True)
        stored = Dataset(obj.name, self._stored_path(obj.path), obj.partition)
        path.write_text(stored.to_json())

    def load_input(self, context: InputContext) -> Dataset:
        asset = context.asset_key.to_user_string()
        if not context.has_asset_partitions:
            path = self._file(asset, None)
            if path.exists():
                return self.read_handle(path)
            return self._standard(asset, path)
        parts = [
            self.read_handle(p)
            for k in context.asset_partition_keys
            if (p := self._file(asset, k)).exists()
        ]
        if not parts:
            return self._standard(asset, self._file(asset, "<partition>"))
        return self._partitions(asset, parts)

    def _partitions(self, asset: str, parts: list[Dataset]) -> Dataset:
        """One directory for the materialized partitions of `asset`: its standard lake directory
        when every partition lies in it (the downstream stage reads every shard there, those the
        CLI wrote too, e.g. `import warc`'s `crawl/shard=import-<k>`, never only the partitions
        Dagster knows of); else the directory holding them all, refused in one line when that
        would be the lake root or above it (it would read unrelated datasets)."""
        import os

        from common import lake

        rel = lake.DATASETS.get(asset)
        standard = self._root() / rel if rel is not None else None
        paths = [Path(p.path) for p in parts]
        if standard is not None:
            inside = [p for p in paths if p == standard or standard in p.parents]
            if len(inside) == len(paths):
                return Dataset(asset, str(standard))
            if inside:  # read those with the rest of the standard directory
                paths = [standard, *(p for p in paths if p not in inside)]
        common = Path(os.path.commonpath([str(p) for p in paths]))
        root = self._root()
        if len(set(paths)) > 1 and (common == root or common in root.parents):
            where = ", ".join(sorted({str(p) for p in paths}))
            raise ValueError(
                f"{root / HANDLES_DIR / asset}: partitions of {asset} lie in {where}, and a "
                f"downstream stage reads one directory; re-materialize them without `out` "
                f"(into {standard or 'one directory'})"
            )
        return Dataset(asset, str(common))


ENVIRONMENTS = ("local", "cluster")


def resources_for(env: str | None = None, root: str | Path | None = None) -> dict[str, Any]:
    """The resource set of one environment, chosen by `env` or $REFINERY_ENV (default `local`).

    local: the embedded defaults (./lake or $REFINERY_HOME, DirectRunner, Chromium found on the
    machine, no teacher). cluster: everything from the environment, so one deployment setting
    switches it: REFINERY_HOME (may be a remote path for the Beam workers), REFINERY_BEAM_RUNNER
    and REFINERY_BEAM_OPTIONS (space-separated, e.g. `--dask_client_address=host:8786`),
    REFINERY_TEACHER_URL / _MODEL (optional: unset, no teacher). The Dagster instance itself (runs, events, schedules) lives in
    $DAGSTER_HOME/dagster.yaml: SQLite locally, Postgres on a cluster. `root` overrides the
    local lake root (tests).
    """
    env = env or os.environ.get("REFINERY_ENV") or "local"
    if env == "local":
        here = str(root or "")
        return {
            "lake": LakeResource(root=here),
            "io_manager": LakeIOManager(root=here),
            "beam": BeamRunnerResource(),
            "browser": BrowserResource(),
            "teacher": TeacherResource(),
        }
    if env == "cluster":
        root = EnvVar("REFINERY_HOME")
        return {
            "lake": LakeResource(root=root),
            "io_manager": LakeIOManager(root=root),
            "beam": BeamRunnerResource(
                runner=EnvVar("REFINERY_BEAM_RUNNER"),
                options=os.environ.get("REFINERY_BEAM_OPTIONS", "").split(),
            ),
            "browser": BrowserResource(),
            # optional, as locally: unset or empty is no teacher (the stages that need one say so)
            "teacher": TeacherResource(
                base_url=os.environ.get("REFINERY_TEACHER_URL", ""),
                model=os.environ.get("REFINERY_TEACHER_MODEL", ""),
            ),
        }
    raise ValueError(f"REFINERY_ENV={env!r}: choose one of {', '.join(ENVIRONMENTS)}")
