"""The `refinery crawl` command and the `raw_pages` Dagster asset, against the fault server."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from crawlers.crawl import shard_of

from .faultserver import FaultServer, Site

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def server():
    with FaultServer([Site("127.0.0.91"), Site("127.0.0.92")], tree_size=30) as fs:
        yield fs


def test_cli_crawls_with_max_pages_and_writes_manifests(server, tmp_path):
    from pipelines.cli import app

    seeds = tmp_path / "seeds.txt"
    seeds.write_text(
        f"# comment\n{server.url('127.0.0.91', '/tree/0')}\n{server.url('127.0.0.92', '/tree/0')}\n"
    )
    out = tmp_path / "out"
    args = [
        "crawl",
        "--seeds",
        str(seeds),
        "--out",
        str(out),
        "--max-pages",
        "9",
        "--delay",
        "0",
        "--allow-private-networks",
        "--quiet",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output[result.output.index("{") :])
    pages = pq.read_table(out / "pages.parquet").to_pylist()
    assert summary["fetched"] == 9 == sum(1 for p in pages if p["warc_file"])
    assert (out / "pages.parquet.manifest.json").exists() and (
        out / "warc" / "manifest.json"
    ).exists()
    # robots.txt and sitemaps are not content pages: they never count toward --max-pages
    assert sum(h.path == "/robots.txt" for h in server.hits) == 2
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 2 and "--resume" in again.output


def test_cli_refuses_without_private_network_flag(server, tmp_path):
    from pipelines.cli import app

    seeds = tmp_path / "seeds.txt"
    seeds.write_text(server.url("127.0.0.91", "/tree/0") + "\n")
    result = CliRunner().invoke(
        app,
        ["crawl", "--seeds", str(seeds), "--out", str(tmp_path / "o"), "--delay", "0", "--quiet"],
    )
    assert result.exit_code == 0, result.output
    row = pq.read_table(tmp_path / "o" / "pages.parquet").to_pylist()[0]
    assert row["crawl_allowed"] is False and row["robots_crawl"] == "unreachable"
    assert server.hits == []


def test_raw_pages_asset_crawls_only_its_shard(server, tmp_path):
    from pipelines.graph import materialize_selection
    from pipelines.stages.crawl import CRAWL_SHARDS

    seeds = [server.url("127.0.0.91", "/tree/0"), server.url("127.0.0.92", "/tree/0")]
    shard = shard_of("127.0.0.91", CRAWL_SHARDS)
    config = {"seeds": seeds, "delay": 0.0, "extra": {"allow_private_networks": True}}
    result = materialize_selection(
        ["raw_pages"],
        tmp_path / "lake",
        partition_key=str(shard),
        run_config={"ops": {"raw_pages": {"config": config}}},
    )
    assert result.success
    out = tmp_path / "lake" / "crawl" / f"shard={shard}"
    hosts = {p["host"].split(":")[0] for p in pq.read_table(out / "pages.parquet").to_pylist()}
    expected = {ip for ip in ("127.0.0.91", "127.0.0.92") if shard_of(ip, CRAWL_SHARDS) == shard}
    assert hosts == expected
    meta = result.asset_materializations_for_node("raw_pages")[0].metadata
    assert meta["pages_fetched"].value == 31 * len(expected)  # 30 tree pages + the sitemap page
    # The other host's seed was routed, not dropped: to its partition's inbox under crawl/outbox/.
    other = shard_of("127.0.0.92", CRAWL_SHARDS)
    assert other != shard
    assert list((tmp_path / "lake" / "crawl" / "outbox" / f"to-{other}").glob("part-*.parquet"))
    # That partition, run with resume: true (and never run before), picks its seed up from there.
    config = {
        "seeds": seeds[:1],
        "delay": 0.0,
        "resume": True,
        "max_pages": 3,
        "extra": {"allow_private_networks": True, "use_sitemaps": False},
    }
    result = materialize_selection(
        ["raw_pages"],
        tmp_path / "lake",
        partition_key=str(other),
        run_config={"ops": {"raw_pages": {"config": config}}},
    )
    assert result.success
    pages = pq.read_table(tmp_path / "lake" / "crawl" / f"shard={other}" / "pages.parquet")
    assert seeds[1] in {p["url"] for p in pages.to_pylist() if p["status"] == 200}


def _stored_config(out):
    import sqlite3

    con = sqlite3.connect(out / "frontier.sqlite")
    try:
        return json.loads(con.execute("SELECT value FROM meta WHERE key='config'").fetchone()[0])
    finally:
        con.close()


def _app():
    from pipelines.cli import app

    return app


def test_cli_precedence_is_flag_then_yaml_then_default(server, tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(server.url("127.0.0.91", "/tree/0") + "\n")
    conf = tmp_path / "crawl.yaml"
    conf.write_text("delay: 0.01\nmax_pages: 2\nconcurrency: 5\nper_host_connections: 2\n")
    out = tmp_path / "out"
    args = [
        "crawl",
        "--seeds",
        str(seeds),
        "--out",
        str(out),
        "--config",
        str(conf),
        "--max-pages",
        "4",
        "--allow-private-networks",
        "--quiet",
    ]
    result = CliRunner().invoke(_app(), args)
    assert result.exit_code == 0, result.output
    cfg = _stored_config(out)
    assert cfg["max_pages"] == 4  # flag beats YAML
    assert (cfg["delay"], cfg["concurrency"], cfg["per_host_connections"]) == (0.01, 5, 2)  # YAML
    assert cfg["agent"] == "RefineryBot" and cfg["allow_private_networks"] is True  # default, flag
    assert json.loads(result.output[result.output.index("{") :])["fetched"] == 4


def test_cli_per_host_connections_flag_and_bad_config_errors(server, tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(server.url("127.0.0.91", "/tree/0") + "\n")
    out = tmp_path / "out"
    base = ["crawl", "--seeds", str(seeds), "--allow-private-networks", "--quiet"]
    ok = CliRunner().invoke(
        _app(),
        [
            *base,
            "--out",
            str(out),
            "--max-pages",
            "1",
            "--per-host-connections",
            "3",
            "--politeness-key",
            "domain",
            "--delay",
            "0",
        ],
    )
    assert ok.exit_code == 0, ok.output
    cfg = _stored_config(out)
    assert (cfg["per_host_connections"], cfg["politeness_key"]) == (3, "domain")
    conf = tmp_path / "bad.yaml"
    conf.write_text("delay: 0.1\nmax_pagez: 3\n")
    bad = CliRunner().invoke(_app(), [*base, "--out", str(tmp_path / "o2"), "--config", str(conf)])
    assert bad.exit_code != 0 and "max_pagez" in bad.output and str(conf) in bad.output
    zero = CliRunner().invoke(
        _app(), [*base, "--out", str(tmp_path / "o3"), "--per-host-connections", "0"]
    )
    assert zero.exit_code != 0 and "--per-host-connections" in zero.output


def test_raw_pages_asset_defaults_to_the_cli_delay_for_real_seeds():
    from crawlers.crawl import CrawlConfig
    from pipelines.graph import config_class
    from pipelines.stages.crawl import CRAWL, SAMPLE_WEB_DELAY_S

    # None: CrawlConfig's polite default applies
    assert config_class(CRAWL, "raw_pages")().delay is None
    assert CrawlConfig().delay == 1.0 and SAMPLE_WEB_DELAY_S < 1.0


def test_only_product_tokens_a_robots_group_can_name_are_accepted():
    """robots.txt groups name tokens of letters, '-' and '_' only: any other token is matched by
    no group of its own (a publisher's `User-agent: Refinery2-Extended` is read as `Refinery`),
    so the config refuses it, in one line naming the field and the fix; the defaults and the
    tokens the tests configure pass, and their groups name them."""
    from pydantic import ValidationError

    from common.errors import validation_problems
    from crawlers.crawl import CrawlConfig
    from crawlers.robots import RobotsTxt

    for field in ("agent", "training_agent"):
        for token in ("Refinery2-Extended", "RefineryBot.Extended", "Refinery Bot", "Bot/1.0"):
            with pytest.raises(ValidationError) as err:
                CrawlConfig(**{field: token})
            line = validation_problems(err.value, model=CrawlConfig)
            assert line.startswith(f"{field}: {token!r} is not a product token"), line
            assert "letters, '-' and '_'" in line and "\n" not in line
    for agent, training in [
        ("RefineryBot", "RefineryBot-Extended"),
        ("ArchiveBot", "ArchiveBot-Train"),
        ("RefineryBot", "X"),
        ("refinery_bot", "refinery-ai"),
    ]:
        cfg = CrawlConfig(agent=agent, training_agent=training)
        body = f"User-agent: *\nAllow: /\n\nUser-agent: {training}\nDisallow: /\n"
        assert RobotsTxt.parse(body.encode()).matched_group(cfg.training_agent) == training.lower()


def test_cli_names_the_config_file_and_field_of_a_bad_training_token(tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://127.0.0.91:9/\n")  # never asked: the config is refused first
    conf = tmp_path / "crawl.yaml"
    conf.write_text("training_agent: Refinery2-Extended\n")
    args = ["crawl", "--seeds", str(seeds), "--out", str(tmp_path / "o"), "--config", str(conf)]
    bad = CliRunner().invoke(_app(), args)
    assert bad.exit_code != 0
    assert str(conf) in bad.output and "training_agent: 'Refinery2-Extended'" in bad.output
