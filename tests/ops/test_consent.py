"""A publisher who opts out later is out of every future mixture (issue 17, "Opt-out sensor").

A real lake from the served sample web (crawl, extract, filter, tokenizer), then one host
disallows the training token; the `consent_recheck` sensor re-fetches robots.txt through the
crawler's downloader, appends the consent ledger and requests the mixture, and the rebuilt
mixture holds 0 tokens from that host while the earlier mixture's manifest is untouched.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from common.consent import (
    LEDGER_SCHEMA,
    append_ledger,
    latest_rows,
    ledger_files,
    ledger_version,
)
from crawlers.consent import matched_rule, recheck
from crawlers.robots import RobotsTxt

pytestmark = pytest.mark.timeout(300)

TRAINING = "RefineryBot-Extended"
SITES = ("wiki-en", "kochen-de", "journal-fr")
OPT_OUT_SITE = "wiki-en"
LOOPBACK = {"allow_private_networks": True, "delay": 0.0, "robots_retries": 0}
OPT_OUT_ROBOTS = (
    b"User-agent: *\nDisallow: /private/\n\n"
    b"# We no longer allow AI training\nUser-agent: RefineryBot-Extended\nDisallow: /\n"
)


@pytest.fixture(scope="module")
def served_lake(tmp_path_factory):
    """(served sample web, lake root): 3 sites crawled, extracted, filtered, tokenizer trained.
    Its own web, not the shared sample lake: the tests change robots.txt on the served hosts."""
    from crawlers.crawl import crawl
    from filters.run import run_filter
    from pipelines.stages.extract import run_extract
    from sampleweb import build_web, serve
    from training.mixture.run import run_tokenizer_train

    lake = tmp_path_factory.mktemp("consent-lake")
    with serve(build_web(0), first_octet=170) as web:
        seeds = [web.base_url(s) + "/" for s in SITES]
        asyncio.run(crawl(seeds, lake / "crawl", {**LOOPBACK, "max_pages": 36}))
        run_extract(lake / "crawl", lake / "extract", "never")
        run_filter(
            lake / "extract", lake / "filter", config={"quality": {"use_default_models": False}}
        )
        run_tokenizer_train(vocab_size=320, sample_tokens=50_000, lake_root=lake)
        yield web, lake


def _spec(path: Path, host: str) -> Path:
    """A tiny mixture with the opted-out host in a bucket of its own, so the manifest counts it."""
    docs = "lake/filter/documents.parquet"
    spec = {
        "name": "consent-test",
        "seq_len": 64,
        "total_tokens": 6000,
        "seed": 3,
        "tokenizer": "lake/tokenizer/tokenizer.json",
        "shard_sequences": 32,
        "allow_shortfall": True,
        "buckets": {
            "host": {
                "weight": 0.5,
                "sources": [{"path": docs, "where": f"host = '{host}'", "optional": True}],
            },
            "rest": {"weight": 0.5, "sources": [{"path": docs, "where": f"host <> '{host}'"}]},
        },
        "eval": {"sequences_per_group": 0, "max_fraction": 0.05},
    }
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _source(manifest: dict, bucket: str) -> dict:
    """The manifest's accounting of a bucket's (only) source: documents, available and tokens."""
    return next(s for s in manifest["sources"] if s["bucket"] == bucket)


def test_opt_out_after_a_run_removes_the_host_from_the_next_mixture(served_lake, tmp_path):
    import json

    from dagster import DagsterInstance, RunRequest, SkipReason, build_sensor_context

    from pipelines.graph import materialize_selection
    from pipelines.resources import LakeResource
    from pipelines.sensors import consent_recheck_sensor
    from training.mixture.run import run_mix_build

    web, lake = served_lake
    netloc = web.base_url(OPT_OUT_SITE).removeprefix("http://")
    host = netloc.split(":")[0]  # documents' host column: the name, without the port
    docs = pq.read_table(lake / "filter" / "documents.parquet").to_pylist()
    host_docs = {d["url"] for d in docs if d["host"] == host and d["training_allowed"]}
    assert len(host_docs) >= 3, "the fixture crawl should keep several documents of the host"

    spec = _spec(tmp_path / "consent-test.yaml", host)
    before = tmp_path / "before"
    run_mix_build(spec, before, lake_root=lake)  # the earlier mixture (as `refinery mix build`)
    earlier = (before / "manifest.json").read_bytes()
    assert _source(json.loads(earlier), "host")["tokens"] > 0
    assert "consent_ledger" not in json.loads(earlier)  # no ledger yet: the manifest as before

    sensor = consent_recheck_sensor(LOOPBACK, ["pretrain_mixture"])
    resources = {"lake": LakeResource(root=str(lake))}
    with DagsterInstance.ephemeral() as instance:
        # Nothing changed yet: the recheck appends nothing and requests nothing.
        ctx = build_sensor_context(instance=instance, resources=resources)
        assert isinstance(sensor(ctx), SkipReason)
        assert ledger_files(lake) == []

        web.set_response(OPT_OUT_SITE, "/robots.txt", OPT_OUT_ROBOTS, content_type="text/plain")
        ctx = build_sensor_context(instance=instance, resources=resources)
        request = sensor(ctx)
        assert isinstance(request, RunRequest), request
        assert [k.to_user_string() for k in request.asset_selection] == ["pretrain_mixture"]
        cursor = ctx.cursor

        # Evaluated again with the same robots.txt: the ledger did not grow, no second request.
        ctx = build_sensor_context(instance=instance, resources=resources, cursor=cursor)
        assert isinstance(sensor(ctx), SkipReason)

    files = ledger_files(lake)
    assert len(files) == 1
    rows = pq.read_table(files[0]).to_pylist()
    assert {r["url"] for r in rows} == host_docs | {
        d["url"]
        for d in pq.read_table(lake / "extract" / "documents.parquet").to_pylist()
        if d["host"] == host and d["robots_training"] == "allowed"
    }
    body_sha = hashlib.sha256(OPT_OUT_ROBOTS).hexdigest()
    for r in rows:
        assert r["host"] == netloc and r["training_allowed"] is False and r["previous"] is True
        assert (r["agent_group"], r["rule"]) == ("refinerybot-extended", "Disallow: /")
        assert r["robots_status"] == 200 and r["robots_sha256"] == body_sha
        assert r["doc_ids"] and r["robots_url"] == web.base_url(OPT_OUT_SITE) + "/robots.txt"
    assert request.run_key == f"consent-{ledger_version(files)['sha256'][:16]}"

    # The requested run: the mixture asset, built by Dagster with the test's spec.
    result = materialize_selection(
        [k.to_user_string() for k in request.asset_selection],
        lake,
        run_config={"ops": {"pretrain_mixture": {"config": {"spec": str(spec)}}}},
    )
    assert result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks and all(checks.values()), checks
    after = json.loads((lake / "mixtures" / "consent-test" / "manifest.json").read_text())
    opted = _source(after, "host")  # 0 documents, 0 tokens from the opted-out host
    assert (opted["documents"], opted["available_tokens"], opted["tokens"]) == (0, 0, 0)
    assert _source(after, "rest")["tokens"] > 0
    assert after["consent_ledger"] == ledger_version(files)
    assert after["consent_ledger"]["opted_out"] == len(rows)
    assert (before / "manifest.json").read_bytes() == earlier  # the earlier manifest unchanged

    # The asset check proves it by content: the earlier mixture, judged as if it had honoured
    # this ledger, holds the host's documents; an edited ledger is refused.
    import shutil

    from training.mixture.checks import mixture_no_opted_out_rows

    leaky = tmp_path / "leaky"
    shutil.copytree(before, leaky)
    claimed = {**json.loads(earlier), "consent_ledger": ledger_version(files)}
    (leaky / "manifest.json").write_text(json.dumps(claimed))
    outcome = mixture_no_opted_out_rows(leaky, lake)
    assert not outcome.passed and outcome.metadata["opted_out_found"] > 0
    assert outcome.metadata["first_found"].startswith(str(lake / "filter" / "documents.parquet"))
    claimed["consent_ledger"] = {**ledger_version(files), "sha256": "0" * 64}
    (leaky / "manifest.json").write_text(json.dumps(claimed))
    with pytest.raises(ValueError, match="consent_ledger: the manifest honoured 1 ledger files"):
        mixture_no_opted_out_rows(leaky, lake)


def test_re_allowed_host_returns_and_outages_are_not_opt_outs(tmp_path, monkeypatch):
    """Latest row wins; an unreachable robots.txt keeps the last state (no rows). The sensor
    wired into the Dagster definitions fetches with the crawl's settings ($REFINERY_ASSET_CONFIG
    raw_pages: here the loopback permission) and requests every mixture."""
    import pyarrow as pa
    from dagster import DagsterInstance, RunRequest, build_sensor_context

    from pipelines.graph import CONFIG_DEFAULTS_ENV, build_definitions
    from pipelines.resources import LakeResource
    from pipelines.sensors import MIXTURE_ASSETS
    from sampleweb import build_web, serve

    lake = tmp_path / "lake"
    (lake / "extract").mkdir(parents=True)
    with serve(build_web(0), first_octet=190) as web:
        urls = [web.url("wiki-en", "/"), web.url("wiki-en", "/about.html")]
        gone = "http://127.0.0.1:9/page.html"  # nothing listens on the discard port
        rows = [
            {"id": f"d{i}", "url": u, "robots_training": "allowed", "training_allowed": True}
            for i, u in enumerate([*urls, gone])
        ]
        pq.write_table(pa.Table.from_pylist(rows), lake / "extract" / "documents.parquet")

        web.set_response("wiki-en", "/robots.txt", OPT_OUT_ROBOTS, content_type="text/plain")
        first = recheck(lake, LOOPBACK)
        assert (first.opted_out, first.re_allowed) == (2, 0)
        assert list(first.unreachable) == ["http://127.0.0.1:9"]

        web.set_response("wiki-en", "/robots.txt", b"not here\n", status=404)  # 4xx: allow all
        ui = tmp_path / "ui.yaml"
        ui.write_text("raw_pages: {allow_private_networks: true, delay: 0.0}\n")
        monkeypatch.setenv(CONFIG_DEFAULTS_ENV, str(ui))
        sensor = build_definitions("local", root=lake).get_sensor_def("consent_recheck")
        with DagsterInstance.ephemeral() as instance:
            resources = {"lake": LakeResource(root=str(lake))}
            request = sensor(build_sensor_context(instance=instance, resources=resources))
        assert isinstance(request, RunRequest)
        assert {k.to_user_string() for k in request.asset_selection} == set(MIXTURE_ASSETS)
        second = latest_rows(ledger_files(lake)[-1:])  # what the sensor's recheck appended
        assert sorted(second) == sorted(urls)
        assert recheck(lake, LOOPBACK).file is None  # nothing changed: no new file

    files = ledger_files(lake)
    assert [f.name for f in files] == ["ledger-000001.parquet", "ledger-000002.parquet"]
    latest = latest_rows(files)
    assert set(latest) == set(urls) and all(r["training_allowed"] for r in latest.values())
    assert {r["robots_kind"] for r in latest.values()} == {"unavailable-4xx"}
    assert ledger_version(files)["opted_out"] == 0


def test_ledger_is_append_only_and_versioned(tmp_path):
    row = {
        "checked_at": "2026-01-01T00:00:00Z",
        "host": "example.org",
        "url": "https://example.org/a",
        "doc_ids": ["x"],
        "training_allowed": False,
        "previous": True,
    }
    assert append_ledger(tmp_path, []) is None and ledger_version([])["sha256"] is None
    first = append_ledger(tmp_path, [row])
    v1 = ledger_version(ledger_files(tmp_path))
    first_bytes = first.read_bytes()
    second = append_ledger(tmp_path, [{**row, "training_allowed": True, "previous": False}])
    assert (first.name, second.name) == ("ledger-000001.parquet", "ledger-000002.parquet")
    assert first.read_bytes() == first_bytes  # never rewritten
    v2 = ledger_version(ledger_files(tmp_path))
    assert v1["sha256"] != v2["sha256"] and (v1["opted_out"], v2["opted_out"]) == (1, 0)
    assert pq.read_schema(first).names == LEDGER_SCHEMA.names
    with pytest.raises(ValueError, match="training_allowed"):
        append_ledger(tmp_path, [{**row, "training_allowed": None}])


@pytest.mark.parametrize(
    ("body", "url", "expected"),
    [
        (OPT_OUT_ROBOTS, "http://h/x.html", ("refinerybot-extended", "Disallow: /")),
        (
            b"User-agent: *\nDisallow: /a/\nAllow: /a/b\n",
            "http://h/a/b/c",
            ("*", "Allow: /a/b"),
        ),
        (b"User-agent: other\nDisallow: /\n", "http://h/x", (None, None)),
        (b"User-agent: *\nDisallow: /private/\n", "http://h/x", ("*", None)),
    ],
)
def test_matched_rule_names_the_group_and_line(body, url, expected):
    robots = RobotsTxt.from_response(200, body)
    assert matched_rule(robots, TRAINING, url) == expected
    allowed = robots.allows(TRAINING, url)
    assert allowed == (expected[1] is None or expected[1].startswith("Allow"))


PRIVATE_ROBOTS = "User-agent: RefineryBot-Extended\nDisallow: /private\nDisallow: /caf\u00e9\n"
FAST = {**LOOPBACK, "connect_timeout": 2.0}


def test_recheck_matches_robots_against_the_canonical_url_and_keys_the_raw_one(tmp_path):
    """A URL the lake spells with an escape, dot segments, raw UTF-8 or a doubled slash meets the
    rule the crawler would have matched (its canonical form, and that form's slashes merged); the
    ledger row keeps the lake's spelling."""
    import pyarrow as pa

    from common.consent import Consent
    from tests.imports.archives import RobotsBodies

    ip = "127.0.0.181"
    lake = tmp_path / "lake"
    (lake / "extract").mkdir(parents=True)
    with RobotsBodies({ip: PRIVATE_ROBOTS}) as server:
        base = f"http://{ip}:{server.port}"
        out = [f"{base}/private/a", f"{base}/%70rivate/b", f"{base}/public/../private/c"]
        out += [f"{base}/caf\u00e9", f"{base}//private/e"]
        kept = f"{base}/public/d"
        urls = [*out, kept]
        pq.write_table(
            pa.table(
                {
                    "id": [f"d{i}" for i in range(len(urls))],
                    "url": urls,
                    "training_allowed": [True] * len(urls),
                    "robots_training": ["allowed"] * len(urls),
                }
            ),
            lake / "extract" / "documents.parquet",
        )
        result = recheck(lake, FAST)
    assert (result.opted_out, result.re_allowed, result.unreachable) == (5, 0, {})
    rows = {r["url"]: r for r in latest_rows(ledger_files(lake)).values()}
    assert set(rows) == set(out)  # keyed by the URL as the lake has it
    assert (
        rows[out[1]]["rule"] == rows[out[2]]["rule"] == rows[out[4]]["rule"] == "Disallow: /private"
    )
    assert rows[out[3]]["rule"].startswith("Disallow: /caf")
    consent = Consent.load(lake)
    for i, u in enumerate(urls):
        assert consent.allows({"id": f"d{i}", "url": u, "training_allowed": True}) == (u == kept)


def test_recheck_asks_the_image_host_and_the_ledger_refuses_the_image_not_its_page(tmp_path):
    """An image host that disallows the training token after the images were stored: the
    recheck asks its robots.txt, appends a row keyed by the image URL (doc_ids: the pair ids),
    and the one rule refuses the image by `src` (or `image_url`) and by pair id; the page's
    own document stays allowed."""
    import pyarrow as pa

    from common.consent import Consent
    from tests.imports.archives import RobotsBodies

    page_ip, image_ip = "127.0.0.182", "127.0.0.183"
    bodies = {page_ip: "User-agent: *\nAllow: /\n", image_ip: OPT_OUT_ROBOTS.decode()}
    lake = tmp_path / "lake"
    (lake / "extract").mkdir(parents=True)
    shard = lake / "images" / "pairs" / "shard=0"
    shard.mkdir(parents=True)
    with RobotsBodies(bodies) as server:
        page = f"http://{page_ip}:{server.port}/article"
        img = f"http://{image_ip}:{server.port}/photo.png"
        doc = {"id": "d1", "url": page, "training_allowed": True, "robots_training": "allowed"}
        pq.write_table(pa.Table.from_pylist([doc]), lake / "extract" / "documents.parquet")
        pair = {"id": "d1-0", "doc_id": "d1", "src": img, "url": page, "training_allowed": True}
        pq.write_table(pa.Table.from_pylist([pair]), shard / "pairs.parquet")
        pq.write_table(pa.Table.from_pylist([pair]), shard / "fetched.parquet")
        result = recheck(lake, FAST)
        assert (image_ip, "/robots.txt") in server.log
    assert (result.documents, result.images, result.opted_out) == (1, 1, 1)
    from pipelines.stages.ops import RecheckSummary

    assert RecheckSummary(**result.as_dict()).images == 1  # the stage's summary carries it
    (row,) = latest_rows(ledger_files(lake)).values()
    assert (row["url"], row["doc_ids"], row["training_allowed"]) == (img, ["d1-0"], False)
    assert row["host"] == f"{image_ip}:{server.port}" and row["rule"] == "Disallow: /"
    consent = Consent.load(lake)
    assert not consent.allows(pair)
    assert not consent.allows({"src": img, "training_allowed": True})  # by the image URL alone
    assert not consent.allows({"image_url": img, "training_allowed": True})
    assert not consent.allows({"pair_id": "d1-0", "training_allowed": True})
    assert consent.allows(doc)  # the page's text is not the image


def _ledger_row(url: str, allowed: bool, ids: list[str]) -> dict:
    return {
        "checked_at": "2026-01-01T00:00:00Z",
        "url": url,
        "doc_ids": ids,
        "training_allowed": allowed,
        "previous": not allowed,
    }


def test_across_lakes_an_opt_out_in_any_lake_wins_whatever_the_file_order(tmp_path):
    """Within one lake the latest row wins; across lakes a URL is out when any lake's latest row
    is an opt-out: an older re-allow in another lake never lifts it, in either file order."""
    from common.consent import Consent, opted_out

    run, other = tmp_path / "a-run", tmp_path / "b-input"
    u, v, w = "http://127.0.0.9/page", "http://127.0.0.9/back", "http://127.0.0.9/other"
    # the input's lake: u out then re-allowed; v out then re-allowed (latest wins there)
    append_ledger(other, [_ledger_row(u, False, ["d1"]), _ledger_row(v, False, ["d2"])])
    append_ledger(other, [_ledger_row(u, True, ["d1"]), _ledger_row(v, True, ["d2"])])
    # the run's lake: u out again (under another id there); w out
    append_ledger(run, [_ledger_row(u, False, ["r1"]), _ledger_row(w, False, ["d3"])])
    files = ledger_files(run) + ledger_files(other)
    for order in (files, files[::-1]):
        consent = Consent.load(None, files=order)
        assert opted_out(order) == ({u, w}, {"d1", "r1", "d3"})
        assert not consent.allows({"url": u, "training_allowed": True})
        assert not consent.allows({"id": "d1", "training_allowed": True})
        assert consent.allows({"url": v, "id": "d2", "training_allowed": True})
        assert latest_rows(order)[u]["training_allowed"] is False
        assert ledger_version(order)["opted_out"] == 2
    # one lake alone: its latest row wins
    assert Consent.load(other).allows({"url": u, "id": "d1", "training_allowed": True})
