"""Worker-side file access through Beam's `FileSystems`, and runner options shared by our pipelines.

Every read and write a worker does (models, inputs, output parts, counts) goes through
`apache_beam.io.filesystems.FileSystems`, so local paths, `gs://`, `s3://` and `hdfs://` work
by configuration (the matching Beam extra and credentials on the workers). Nothing assumes the
driver and the workers share a disk.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from typing import Any

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

DASK_RUNNER = "apache_beam.runners.dask.dask_runner.DaskRunner"
# Short runner names plain Beam does not resolve itself.
RUNNER_ALIASES = {"DaskRunner": DASK_RUNNER}
DASK_PARTITIONS = 2
_RAW = CompressionTypes.UNCOMPRESSED  # never guess compression from a file name


def is_local(path: str) -> bool:
    """True for plain paths (no URL scheme): the driver may use them directly."""
    return FileSystems.get_scheme(str(path)) in (None, "file")


def join(base: str, *parts: str) -> str:
    """Join path parts for any filesystem."""
    return FileSystems.join(str(base), *parts)


def exists(path: str) -> bool:
    """Whether a file or directory exists."""
    return FileSystems.exists(str(path))


def mkdirs(path: str) -> None:
    """Create a directory (object stores have none: a no-op there); fine if it exists."""
    if is_local(path):
        os.makedirs(path, exist_ok=True)
        return
    try:
        FileSystems.mkdirs(str(path))
    except OSError:
        pass


def read_bytes(path: str) -> bytes:
    """Whole contents of a (small) file."""
    with FileSystems.open(str(path), compression_type=_RAW) as f:
        return f.read()


def write_bytes(path: str, data: bytes) -> None:
    """Write a whole file."""
    with FileSystems.create(str(path), compression_type=_RAW) as f:
        f.write(data)


def read_json(path: str) -> Any:
    """A JSON document."""
    return json.loads(read_bytes(path))


def write_json(path: str, doc: Any) -> None:
    """Write a JSON document."""
    write_bytes(path, json.dumps(doc, sort_keys=True).encode())


def open_read(path: str):
    """A seekable binary file object (pyarrow reads Parquet from it)."""
    return FileSystems.open(str(path), compression_type=_RAW)


def open_write(path: str):
    """A binary file object that creates `path` (pyarrow writes Parquet into it)."""
    return FileSystems.create(str(path), compression_type=_RAW)


def rename(src: str, dst: str) -> None:
    """Move a file (replacing dst), so readers never see a half-written output."""
    if exists(dst):
        FileSystems.delete([str(dst)])
    FileSystems.rename([str(src)], [str(dst)])


def delete_tree(path: str) -> None:
    """Remove a directory (or prefix) and everything under it; fine if it is gone."""
    if is_local(path):
        shutil.rmtree(path, ignore_errors=True)
        return
    matches = FileSystems.match([join(path, "**")])[0].metadata_list
    if matches:
        FileSystems.delete([m.path for m in matches])


def list_files(pattern: str) -> list[str]:
    """Sorted paths matching a glob."""
    return sorted(m.path for m in FileSystems.match([str(pattern)])[0].metadata_list)


def stage_locally(path: str | None) -> str | None:
    """A local directory holding the files of `path`: itself if local, else a fresh copy.

    Used for model directories: fastText loads from a local file, so a worker copies the
    (small) models it needs from `gs://...`/`s3://...` once, in `setup()`.
    """
    if path is None or is_local(path):
        return path
    local = tempfile.mkdtemp(prefix="refinery-stage-")
    for src in list_files(join(path, "*")):
        with open(os.path.join(local, src.rstrip("/").rsplit("/", 1)[-1]), "wb") as f:
            f.write(read_bytes(src))
    return local


def runner_args(args: Sequence[str]) -> list[str]:
    """Pipeline args with short runner names resolved (`DaskRunner`) and Dask defaults set.

    Accepts `--runner NAME` and `--runner=NAME`. On Dask the pipeline's `Create` (chunks of
    rows, read units) is cut into `--dask_npartitions` partitions (default DASK_PARTITIONS)
    unless `--dask_partition_size` is given: Beam's Dask translation keeps those partitions
    through every later step (a Flatten adds its inputs' partitions up), so this is both the
    pipeline's parallelism and a factor in its task count. Set it to about the number of worker
    processes.
    """
    out: list[str] = []
    it = iter(args)
    for a in it:
        if a == "--runner":
            a = f"--runner={next(it, '')}"
        if a.startswith("--runner="):
            name = a.split("=", 1)[1]
            a = f"--runner={RUNNER_ALIASES.get(name, name)}"
        out.append(a)
    if is_dask(out) and not any(
        a.startswith(("--dask_npartitions", "--dask_partition_size")) for a in out
    ):
        out.append(f"--dask_npartitions={DASK_PARTITIONS}")
    return out


@functools.cache
def _beam_options() -> tuple:
    """(Beam's own pipeline-options parser, {option string: whether it takes a value}), from
    `PipelineOptions.get_all_options` (every registered options class, the DaskRunner's too);
    built once per process."""
    from apache_beam.options.pipeline_options import PipelineOptions

    try:  # registers DaskOptions (--dask_client_address, --dask_npartitions, ...)
        import apache_beam.runners.dask.dask_runner  # noqa: F401
    except ImportError:
        pass
    got: list = []
    PipelineOptions([]).get_all_options(add_extra_args_fn=got.append)
    parser = got[0]
    takes_value = {o: a.nargs != 0 for a in parser._actions for o in a.option_strings}
    return parser, takes_value


def unknown_option(args: Sequence[str], own: Sequence[str] = ()) -> tuple[str, str] | None:
    """(the first argument in `args` that no Beam pipeline option takes: an option's name, or a
    bare word; the closest of `own` (the caller's flags) or of Beam's options, "" for none);
    None when Beam takes them all.

    Beam parses pipeline args with `parse_known_args` and discards what it does not know with
    a warning, so a mistyped flag would run the job without it."""
    import difflib

    parser, takes_value = _beam_options()
    _, unknown = parser.parse_known_args(runner_args(args))
    if not unknown:
        return None
    first = unknown[0]
    if not first.startswith("-"):
        return first, ""
    name = first.split("=", 1)[0]
    close = difflib.get_close_matches(name, list(own), n=1, cutoff=0.75)
    close = close or difflib.get_close_matches(name, list(takes_value), n=1, cutoff=0.75)
    return name, close[0] if close else ""


def split_options(tokens: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the option tokens, the others) of a command's positional list into which the command
    line parser put the options it does not declare (a variadic FILE argument does): an
    option is a token starting with '-', with the next token when Beam's option of that name
    takes a value and none is given with '='."""
    takes_value = _beam_options()[1]
    options: list[str] = []
    rest: list[str] = []
    it = iter(tokens)
    for token in it:
        if not token.startswith("-") or token == "-":
            rest.append(token)
            continue
        options.append(token)
        if "=" not in token and takes_value.get(token):
            nxt = next(it, None)
            if nxt is not None:
                options.append(nxt)
    return options, rest


def is_dask(args: Sequence[str]) -> bool:
    """Whether the args select Beam's DaskRunner."""
    return f"--runner={DASK_RUNNER}" in args


def run(pipeline) -> None:
    """Run a pipeline to completion; close the Dask client the DaskRunner opened (if any)."""
    result = pipeline.run()
    try:
        result.wait_until_finish()
    finally:
        client = getattr(result, "client", None)
        if client is not None:
            client.close()
