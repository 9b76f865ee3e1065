"""Worker-side file access through Beam's `FileSystems`, and runner options shared by our pipelines.

Every read and write a worker does (models, inputs, output parts, counts) goes through
`apache_beam.io.filesystems.FileSystems`, so local paths, `gs://`, `s3://` and `hdfs://` work
by configuration (the matching Beam extra and credentials on the workers). Nothing assumes the
driver and the workers share a disk.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Sequence
from typing import Any

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

DASK_RUNNER = "apache_beam.runners.dask.dask_runner.DaskRunner"
# Short runner names plain Beam does not resolve itself.
RUNNER_ALIASES = {"DaskRunner": DASK_RUNNER}
DASK_PARTITIONS = 2
PROBE_TIMEOUT_S = 3.0  # connecting to a job service or Dask scheduler before any work
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
    built once per process. The parser raises `argparse.ArgumentError` on a bad value rather
    than printing Beam's whole usage and exiting (`parse_options` turns that into one line)."""
    from apache_beam.options.pipeline_options import PipelineOptions

    try:  # registers DaskOptions (--dask_client_address, --dask_npartitions, ...)
        import apache_beam.runners.dask.dask_runner  # noqa: F401
    except ImportError:
        pass
    got: list = []
    PipelineOptions([]).get_all_options(add_extra_args_fn=got.append)
    parser = got[0]

    def error(message: str) -> None:
        if message.startswith("ambiguous option: "):
            return  # as Beam's parser: an unknown option is not matched by prefix
        raise argparse.ArgumentError(None, message)

    parser.exit_on_error = False
    parser.error = error
    takes_value = {o: a.nargs != 0 for a in parser._actions for o in a.option_strings}
    return parser, takes_value


def _accepts(action: argparse.Action | None) -> str:
    """What an option's value may be, in words ("" when the parser's message says it)."""
    if action is None or action.choices:
        return ""  # argparse's message lists the choices
    kinds = {int: "an integer", float: "a number", bool: "true or false"}
    return kinds.get(action.type, "a value" if action.nargs != 0 else "no value")


def parse_options(args: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """(Beam's parsed pipeline options, the args it does not know) of `args` (short runner
    names resolved). A bad value (`--direct_num_workers=two`, an unknown choice, an option
    without its value) is a ValueError naming the option, the value and what it takes, in one
    line: Beam's own parser would print its 130-line usage and exit (a SystemExit, which no
    error handler sees)."""
    parser, _ = _beam_options()
    try:
        return parser.parse_known_args(runner_args(args))
    except argparse.ArgumentError as exc:
        name = exc.argument_name or ""
        action = next((a for a in parser._actions if name in a.option_strings), None)
        accepts = _accepts(action)
        what = f"Beam pipeline option {name}" if name else "Beam pipeline options"
        takes = f"; it takes {accepts}" if accepts else ""
        raise ValueError(f"{what}: {exc.message}{takes}; fix the value") from None


def unknown_option(args: Sequence[str], own: Sequence[str] = ()) -> tuple[str, str] | None:
    """(the first argument in `args` that no Beam pipeline option takes: an option's name, or a
    bare word; the closest of `own` (the caller's flags) or of Beam's options, "" for none);
    None when Beam takes them all.

    Beam parses pipeline args with `parse_known_args` and discards what it does not know with
    a warning, so a mistyped flag would run the job without it."""
    import difflib

    takes_value = _beam_options()[1]
    _, unknown = parse_options(args)
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


def runner_name(args: Sequence[str]) -> str:
    """The runner the args select, as given (the last `--runner`; Beam's default if none)."""
    name = ""
    it = iter(args)
    for a in it:
        if a == "--runner":
            name = next(it, "")
        elif a.startswith("--runner="):
            name = a.split("=", 1)[1]
    return name or "DirectRunner"


def _runner(name: str, own: Sequence[str]):
    """Beam's runner object for a runner name (short names resolved); a ValueError naming the
    stage's own runners and Beam's, and the closest of them, for a name neither knows."""
    import difflib

    from apache_beam.options.pipeline_options import StandardOptions
    from apache_beam.runners.runner import create_runner

    resolved = RUNNER_ALIASES.get(name, name)
    try:
        return create_runner(resolved)
    except (ValueError, ImportError, AttributeError) as exc:
        ours = [*own, *(n for n in RUNNER_ALIASES if n not in own)]
        beams = [n for n in StandardOptions.KNOWN_RUNNER_NAMES if not n.startswith("Test")]
        close = difflib.get_close_matches(name, [*ours, *beams], n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}? " if close else ""
        why = "no such runner" if isinstance(exc, ValueError) else f"cannot load it ({exc})"
        raise ValueError(
            f"--runner {name}: {why}; {hint}the stage's runners: {', '.join(ours)}; Beam's: "
            f"{', '.join(beams)}, or a PipelineRunner subclass's dotted name"
        ) from None


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a gRPC target or Dask address (`host:port`, `[::1]:port`,
    `dns:///host:port`, `tcp://host:port`); None for one that names no TCP port (`unix:...`)."""
    for prefix in ("dns:///", "dns:", "ipv4:", "ipv6:", "tcp://"):
        if address.startswith(prefix):
            address = address[len(prefix) :]
            break
    if "://" in address or address.startswith("unix:") or ":" not in address:
        return None
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit():
        return None
    return host, int(port)


def _probe(flag: str, address: str, fix: str) -> None:
    """Refuse, in one line, an address where nothing accepts a TCP connection within
    PROBE_TIMEOUT_S: the runner would otherwise wait minutes before failing."""
    target = _host_port(address)
    if target is None:
        return
    try:
        socket.create_connection(target, timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ValueError(
            f"{flag}={address}: nothing answers there ({reason}); {fix}, then re-run"
        ) from None


def _value(options: argparse.Namespace, flag: str):
    """The parsed value of one Beam option, by its flag (its attribute may be named otherwise:
    `--dask_client_address` is `address`)."""
    parser, _ = _beam_options()
    action = next((a for a in parser._actions if flag in a.option_strings), None)
    return None if action is None else getattr(options, action.dest, None)


def check_args(args: Sequence[str], own: Sequence[str] = ()) -> list[str]:
    """`runner_args(args)`, checked before a stage clears or writes any output: a bad option
    value, a runner name neither the stage (`own`, and the short names of RUNNER_ALIASES) nor
    Beam knows, and a job service (`--job_endpoint` of a portable runner: Portable, Flink,
    Spark, Prism) or Dask scheduler (`--dask_client_address`) where nothing listens are each a
    ValueError of one line. Beam itself resolves the runner only when the pipeline is built,
    and a portable runner waits minutes (job_server_timeout) for a missing job service."""
    from apache_beam.runners.portability.portable_runner import PortableRunner

    args = runner_args(args)
    options, _ = parse_options(args)
    runner = _runner(runner_name(args), own)
    endpoint = _value(options, "--job_endpoint")
    if isinstance(runner, PortableRunner) and endpoint and endpoint != "embed":
        _probe("--job_endpoint", endpoint, "start the job service there or fix the endpoint")
    dask = _value(options, "--dask_client_address")
    if is_dask(args) and dask:
        _probe("--dask_client_address", dask, "start the Dask scheduler there or fix the address")
    return args


def _job_endpoint(pipeline) -> str | None:
    """The `--job_endpoint` a pipeline's portable runner talks to (None: not given)."""
    from apache_beam.options.pipeline_options import PortableOptions

    return pipeline.options.view_as(PortableOptions).job_endpoint


def run(pipeline) -> None:
    """Run a pipeline to completion; close the Dask client the DaskRunner opened (if any).

    A job service that goes away mid-run (gRPC UNAVAILABLE or DEADLINE_EXCEEDED) is a
    ValueError of one line naming its `--job_endpoint` and the fix, not gRPC's own error."""
    import grpc

    result = None
    try:
        result = pipeline.run()
        result.wait_until_finish()
    except grpc.RpcError as exc:
        endpoint = _job_endpoint(pipeline)
        lost = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
        code = exc.code() if callable(getattr(exc, "code", None)) else None
        if endpoint is None or code not in lost:
            raise
        raise ValueError(
            f"--job_endpoint={endpoint}: the job service there went away mid-run "
            f"({code.name}: {exc.details()}); restart it and re-run"
        ) from exc
    finally:
        client = getattr(result, "client", None)
        if client is not None:
            client.close()
