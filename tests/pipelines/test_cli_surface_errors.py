"""User errors of `refinery crawl`, `sampleweb`, `demo` and `ui` are one line naming the flag,
the --config file's key or the run config's key, and they leave the lake as it was: a crawl
whose seeds are all unusable writes nothing; `ui` shows the instance $DAGSTER_HOME names."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.stage import Lake

ROOT = Path(__file__).resolve().parents[2]
SEED = "http://127.0.0.1:9/"  # never fetched: every case here is refused first


@pytest.fixture()
def cli(tmp_path, monkeypatch):
    """Invoke `refinery ARGS...` in process with the lake at tmp_path/lake: (exit code, the
    `error:` line)."""
    from pipelines.cli import app

    monkeypatch.setenv("REFINERY_HOME", str(tmp_path / "lake"))
    monkeypatch.setenv("REFINERY_LOG_DIR", str(tmp_path / "logs"))

    def invoke(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(app, [str(a) for a in args])
        errors = [ln for ln in result.output.splitlines() if ln.startswith("error: ")]
        return result.exit_code, errors[0] if errors else result.output

    return invoke


@pytest.fixture()
def seeds(tmp_path) -> Path:
    path = tmp_path / "seeds.txt"
    path.write_text(SEED + "\n")
    return path


@pytest.mark.parametrize(
    "flags, line",
    [
        (["--max-pages", "-1"], "error: --max-pages: Input should be greater than or equal to 0"),
        (["--concurrency", "0"], "error: --concurrency: Input should be greater than or equal"),
        (["--delay", "-5"], "error: --delay: Input should be greater than or equal to 0"),
        (["--shard", "5/4"], "error: --shard '5/4': K/N needs 0 <= K < N"),
        (["--shard", "0/0"], "error: --shard '0/0': K/N needs 0 <= K < N"),
        (["--training-agent", "RefineryBot"], "error: --training-agent: agent and training_agent"),
    ],
)
def test_crawl_names_the_flag_of_a_bad_value(cli, seeds, tmp_path, flags, line):
    code, out = cli("crawl", "--seeds", seeds, *flags)
    assert code == 2 and out.startswith(line), out
    assert "flags" not in out and "<root>" not in out
    assert not (tmp_path / "lake" / "crawl").exists()


def test_crawl_names_the_config_file_key_unless_a_flag_overrides_it(cli, seeds, tmp_path):
    conf = tmp_path / "crawl.yaml"
    conf.write_text("max_pages: -1\nmax_depth: -2\n")
    code, out = cli("crawl", "--seeds", seeds, "--config", conf)
    assert code == 2, out
    assert f"--config {conf}: max_pages: Input should be greater" in out
    assert f"--config {conf}: max_depth: Input should be greater" in out
    shards = tmp_path / "shards.yaml"
    shards.write_text("shard: 5\nshards: 4\n")
    code, out = cli("crawl", "--seeds", seeds, "--config", shards)
    assert code == 2, out
    assert out.startswith(f"error: --config {shards}: shard/shards: shard=5 must be < shards=4")
    code, out = cli("crawl", "--seeds", seeds, "--config", conf, "--max-pages", "-3")
    assert code == 2 and "error: --max-pages: Input should be greater" in out, out


def test_raw_pages_names_the_run_config_key(tmp_path):
    from pipelines.stages.crawl import CRAWL, CrawlParams

    params = CrawlParams(seeds=[SEED], max_pages=-1, extra={"max_depth": -2})
    with pytest.raises(ValueError) as err:
        CRAWL.run(params, Lake(root=tmp_path, partition="0"))
    line = str(err.value)
    assert line.startswith("config.max_pages: Input should be greater than or equal to 0"), line
    assert "config.extra.max_depth: Input should be greater" in line and "flags" not in line


def test_crawl_with_no_usable_seed_leaves_the_lake_as_it_was(cli, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("ftp://example.invalid/\nnot a url\n")
    code, out = cli("crawl", "--seeds", bad)
    assert code == 2, out
    assert out.startswith(f"error: --seeds {bad}: no usable seed URL ('ftp://example.invalid/'")
    assert not (tmp_path / "lake" / "crawl").exists()  # a corrected rerun is not refused


def test_raw_pages_with_no_usable_seed_keeps_the_shard_it_would_replace(tmp_path):
    from crawlers.crawl.config import CrawlError
    from pipelines.stages.crawl import CRAWL, CrawlParams

    shard = tmp_path / "crawl" / "shard=0"
    shard.mkdir(parents=True)
    (shard / "pages.parquet").write_bytes(b"the crawl that is there")
    with pytest.raises(CrawlError, match=r"^config\.seeds: no usable seed URL"):
        CRAWL.run(CrawlParams(seeds=["mailto:x@y"]), Lake(root=tmp_path, partition="0"))
    assert (shard / "pages.parquet").read_bytes() == b"the crawl that is there"
    assert not (shard / "frontier.sqlite").exists()


@pytest.mark.parametrize(
    "args, flag",
    [(["sampleweb", "write", "--out"], "--out"), (["demo", "--lake"], "--lake")],
)
def test_a_file_where_the_output_directory_goes_is_named_by_its_flag(cli, tmp_path, args, flag):
    file = tmp_path / "a-file"
    file.write_text("x")
    code, out = cli(*args, file)
    assert code == 2 and out.startswith(f"error: {flag} {file}: is a file; give a directory"), out
    code, out = cli(*args, file / "sub")
    assert code == 2 and out.startswith(f"error: {flag} {file / 'sub'}: {file} is a file"), out


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_sampleweb_serve_refuses_a_port_out_of_range(cli, port):
    code, out = cli("sampleweb", "serve", "--port", port)
    assert code == 2 and out.startswith(f"error: --port {port}: not a TCP port"), out


def test_ui_uses_dagster_home_from_the_environment(cli, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(subprocess, "call", lambda cmd, env, cwd: calls.append((cmd, env)) or 0)
    home = tmp_path / "dh"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    code, _ = cli("ui")
    assert code == 0 and len(calls) == 1
    cmd, env = calls[0]
    assert env["DAGSTER_HOME"] == str(home.resolve())
    assert (home / "dagster.yaml").read_text() == (
        ROOT / "dagster_home" / "dagster.yaml"
    ).read_text()
    assert cmd[cmd.index("-w") + 1] == str(ROOT / "dagster_home" / "workspace.yaml")
    code, _ = cli("ui", "--dagster-home", tmp_path / "other")  # the flag still wins
    assert code == 0 and calls[1][1]["DAGSTER_HOME"] == str((tmp_path / "other").resolve())


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_ui_uses_dagster_home_from_the_environment(tmp_path):
    def dry_run(env: dict[str, str]) -> str:
        base = {k: v for k, v in __import__("os").environ.items() if k != "DAGSTER_HOME"}
        out = subprocess.run(
            ["make", "-n", "ui"], cwd=ROOT, env={**base, **env}, capture_output=True, text=True
        )
        return out.stdout

    assert f'--dagster-home "{ROOT / "dagster_home"}"' in dry_run({})
    assert f'--dagster-home "{tmp_path}"' in dry_run({"DAGSTER_HOME": str(tmp_path)})
