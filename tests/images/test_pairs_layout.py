"""The lake's images/pairs holds one build at a time: an unsharded one, or shard=<k>/ builds of one
shard count. `pairs_files` (what every reader of pairs lists files with) refuses what would read
pairs twice or leave some out: an unsharded pairs.parquet beside shard builds, shard builds of
two shard counts, a build that did not finish (its fetch journal, no whole pairs.parquet), a pair
id in two files. `images build` clears what its output would mix with, so the lake stays valid."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from common.inputs import InputError
from common.manifest import manifest_path, write_parquet
from common.pairs import FETCH_JOURNAL, pairs_files
from crawlers.images.journal import JOURNAL
from pipelines.cli import app

from .conftest import Resource, encode
from .test_shards import IMAGE_HOSTS, _extract_dir, _site


def _build(out, ids, shard=None, *, journal=True, manifest=True):
    """An `images build` output as the stage leaves it: pairs.parquet (+ manifest naming the
    shard) and the fetch journal."""
    out.mkdir(parents=True, exist_ok=True)
    table = pa.table({"id": ids, "caption": [f"c {i}" for i in ids]})
    extra = {"shard": shard} if shard else None
    write_parquet(table, out / "pairs.parquet", inputs=[], extra=extra)
    if not manifest:
        manifest_path(out / "pairs.parquet").unlink()
    if journal:
        (out / FETCH_JOURNAL).write_bytes(b"")
    return out


def test_the_journal_name_is_the_fetchs():
    assert FETCH_JOURNAL == JOURNAL


def test_shard_builds_of_one_count_are_read_once_each(tmp_path):
    base = tmp_path / "images" / "pairs"
    _build(base / "shard=0", ["a", "b"], "0/2")
    _build(base / "shard=1", ["c"], "1/2")
    files = pairs_files(base)
    assert [f.parent.name for f in files] == ["shard=0", "shard=1"]


def test_an_unsharded_build_beside_shard_builds_is_refused(tmp_path):
    """The reviewer's lake: every pair in the unsharded pairs.parquet and again in a shard's."""
    base = tmp_path / "images" / "pairs"
    _build(base, ["x1", "x2"], "0/1")
    _build(base / "shard=0", ["y1"], "0/2")
    _build(base / "shard=1", ["y2"], "1/2")
    with pytest.raises(InputError, match=r"pairs: holds an unsharded .*shard=0/.*re-run"):
        pairs_files(base)


def test_an_unfinished_shard_build_is_refused_naming_the_resume_command(tmp_path):
    """A re-run of shard 1 killed during its fetch: its old pairs are gone, its journal stays.
    Listing shard 0 alone would leave shard 1's pairs out without a word."""
    base = tmp_path / "images" / "pairs"
    _build(base / "shard=0", ["a", "b"], "0/2")
    (base / "shard=1").mkdir()
    (base / "shard=1" / FETCH_JOURNAL).write_bytes(b"")
    with pytest.raises(InputError) as err:
        pairs_files(base)
    msg = str(err.value)
    assert "shard=1" in msg and "did not finish" in msg and "\n" not in msg
    assert "`refinery images build --shard 1/2 --resume`" in msg
    # the shard directory itself, as a reader may be given it
    with pytest.raises(InputError, match=r"shard=1: an `images build` that did not finish"):
        pairs_files(base / "shard=1")


def test_a_pairs_file_without_its_manifest_beside_a_journal_is_unfinished(tmp_path):
    """Killed between the pairs file's rename and its manifest (written last)."""
    out = _build(tmp_path / "b", ["a"], "0/1", manifest=False)
    for given in (out, out / "pairs.parquet"):
        with pytest.raises(InputError, match="without its manifest.*--out .*/b --resume"):
            pairs_files(given)


def test_shard_builds_of_two_shard_counts_are_refused(tmp_path):
    base = tmp_path / "pairs"
    _build(base / "shard=0", ["a"], "0/2")
    _build(base / "shard=1", ["b"], "1/4")
    with pytest.raises(InputError, match=r"shard builds of 2 shards .* 4 shards"):
        pairs_files(base)


def test_a_pair_id_in_two_files_is_refused(tmp_path):
    one = _build(tmp_path / "one", ["a", "b"])
    two = _build(tmp_path / "two", ["c", "b"])
    with pytest.raises(InputError, match=r"two/pairs.parquet: pair id 'b' is also in .*one"):
        pairs_files([one, two])
    with pytest.raises(InputError, match="pair id 'a'"):  # the same build given twice
        pairs_files([one / "pairs.parquet", one])
    assert len(pairs_files([one, tmp_path / "two" / "pairs.parquet"][:1])) == 1


def _cli(args, home):
    res = CliRunner(env={"REFINERY_HOME": str(home)}).invoke(
        app, ["images", "build", *args, "--allow-private-networks", "--delay", "0"]
    )
    assert res.exit_code == 0, res.output
    return res


def test_lake_builds_unsharded_then_sharded_then_unsharded_never_mix(
    tmp_path, image_server, monkeypatch
):
    """The lake default: a shard run removes the unsharded build's outputs (pairs, fetched,
    interleaved, images, journal), an unsharded run the shard builds, and a shard run of another
    shard count the shard builds of the old one; each pair is listed once throughout."""
    routes = {f"/img/{i}.png": Resource(encode(48, 40 + i, "PNG")) for i in range(8)}
    server = image_server(routes, ips=IMAGE_HOSTS)
    refs = _site(server.url)[:8]  # one image on each of the 8 image servers
    extract = tmp_path / "extract"
    rows = _extract_dir(extract, refs)
    home = tmp_path / "lake"
    monkeypatch.setenv("REFINERY_HOME", str(home))
    base = home / "images" / "pairs"
    want = sorted(f"{r['doc_id']}-{r['position']}" for r in rows)

    def listed():
        files = pairs_files(base)
        ids = [i for f in files for i in pq.read_table(f, columns=["id"])["id"].to_pylist()]
        assert sorted(ids) == want  # every ref once
        return sorted(str(f.relative_to(base)) for f in files)

    _cli(["--docs", str(extract)], home)
    assert (base / "interleaved.parquet").exists() and listed() == ["pairs.parquet"]
    _cli(["--docs", str(extract), "--shard", "0/2"], home)
    assert sorted(p.name for p in base.iterdir()) == ["shard=0"]  # the unsharded build went
    _cli(["--docs", str(extract), "--shard", "1/2"], home)
    assert listed() == ["shard=0/pairs.parquet", "shard=1/pairs.parquet"]
    for k in range(3):  # another shard count: the 2-shard builds go as the first one runs
        _cli(["--docs", str(extract), "--shard", f"{k}/3"], home)
        assert sorted(p.name for p in base.iterdir()) == [f"shard={j}" for j in range(k + 1)]
    assert listed() == [f"shard={k}/pairs.parquet" for k in range(3)]
    _cli(["--docs", str(extract)], home)
    assert not list(base.glob("shard=*")) and listed() == ["pairs.parquet"]
