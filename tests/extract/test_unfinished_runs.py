"""Extraction over a crawl a kill left unfinished, and an extraction killed while it merges.

A sharded crawl whose shard was killed (a re-materialised partition starts by deleting its old
output, so only frontier.sqlite and warc/ remain) is refused, never skipped; an extract run
killed between two of its five outputs never leaves the previous run's outputs, or their
manifests, beside the new ones.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.inputs import InputError
from common.manifest import manifest_path, read_manifest
from common.schemas import OUTPUTS
from crawlers.crawl.frontier import Frontier
from crawlers.extract.run import OUTPUT_NAMES, run_extract
from crawlers.extract.warc import find_pages_files
from tests.extract.conftest import write_crawl

ARTICLE = (
    "<html><head><title>{t}</title></head><body><article><h1>{t}</h1>"
    + "<p>{t} is a page long enough to be extracted as a document by trafilatura. " * 6
    + '</p><img src="/img/{t}.jpg" alt="a picture of {t}"></article></body></html>'
)


def _pages(host: str, names: list[str]) -> list[dict]:
    return [
        {
            "url": f"http://{host}/{n}",
            "status": 200,
            "content_type": "text/html",
            "body": ARTICLE.format(t=n).encode(),
        }
        for n in names
    ]


def _killed_crawl(d: Path, shard: int | None = None, shards: int | None = None) -> Path:
    """What a crawl killed before it finished leaves: its frontier and WARC files only."""
    (d / "warc").mkdir(parents=True)
    (d / "warc" / "crawl-0.warc.gz").write_bytes(b"")
    frontier = Frontier(d / "frontier.sqlite")
    with frontier:
        if shard is not None:
            frontier.set_meta("config", {"shard": shard, "shards": shards})
    frontier.close()
    return d


def _no_execute(*args, **kwargs):
    pytest.fail("extraction ran over a crawl that did not finish")


def test_extract_refuses_a_killed_crawl_shard_instead_of_skipping_it(tmp_path):
    crawl = tmp_path / "crawl"
    write_crawl(crawl / "shard=0", _pages("127.0.0.1", ["a", "b"]))
    _killed_crawl(crawl / "shard=1", 1, 2)
    with pytest.raises(InputError) as err:
        find_pages_files(crawl)
    msg = str(err.value)
    assert len(msg.splitlines()) == 1
    assert msg.startswith(f"{crawl / 'shard=1'}: a crawl that did not finish")
    assert "holds frontier.sqlite, warc/ but no pages.parquet" in msg
    assert f"--out {crawl / 'shard=1'} --shard 1/2 --resume" in msg
    assert "raw_pages partition again with resume: true" in msg
    with pytest.raises(InputError, match="shard=1"):
        run_extract(crawl, tmp_path / "out", "never", execute=_no_execute)


def test_a_killed_crawl_without_a_recorded_shard_names_the_shard_of_its_directory(tmp_path):
    crawl = tmp_path / "crawl"
    write_crawl(crawl / "shard=0", _pages("127.0.0.1", ["a"]))
    (crawl / "shard=3" / "checkpoints").mkdir(parents=True)  # no frontier to read K/N from
    with pytest.raises(InputError, match=r"holds checkpoints/ but no pages\.parquet.*--shard 3/N"):
        find_pages_files(crawl)


def test_a_resumed_crawl_killed_with_checkpoints_left_is_refused(tmp_path):
    """checkpoints/ holds pages newer than pages.parquet until the crawl compacts them."""
    crawl = tmp_path / "crawl"
    write_crawl(crawl, _pages("127.0.0.1", ["a"]), crawl_config={"shard": 0, "shards": 1})
    (crawl / "checkpoints").mkdir()
    (crawl / "checkpoints" / "pages-000001.parquet").write_bytes(b"")
    with pytest.raises(InputError) as err:
        find_pages_files(crawl)
    assert "holds checkpoints/" in str(err.value)
    assert f"--out {crawl} --shard 0/1 --resume" in str(err.value)


def test_a_killed_unsharded_crawl_says_how_to_resume_it(tmp_path):
    crawl = _killed_crawl(tmp_path / "crawl", 0, 1)
    with pytest.raises(InputError, match=r"--shard 0/1 --resume"):
        find_pages_files(crawl)


def test_a_killed_import_shard_is_refused_with_the_import_to_rerun(tmp_path):
    crawl = tmp_path / "crawl"
    write_crawl(crawl / "shard=0", _pages("127.0.0.1", ["a"]))
    (crawl / "shard=import" / "parts").mkdir(parents=True)
    with pytest.raises(InputError) as err:
        find_pages_files(crawl)
    msg = str(err.value)
    assert msg.startswith(f"{crawl / 'shard=import'}: an import that did not finish")
    assert f"refinery import warc FILES... --out {crawl / 'shard=import'}" in msg


def test_finished_shards_and_pages_written_by_other_tools_are_read(tmp_path):
    """The control: finished shards, with their manifest (the stage's) or without (the Python
    API `crawlers.crawl.crawl` writes none), and bare pages tables (no crawl state) pass."""
    from common.manifest import write_manifest

    crawl = tmp_path / "crawl"
    write_crawl(crawl / "shard=0", _pages("127.0.0.1", ["a"]), crawl_config={"delay": 0.0})
    write_manifest(crawl / "shard=0" / "pages.parquet", rows=1)
    write_crawl(crawl / "shard=1", _pages("127.0.0.2", ["b"]), crawl_config={"delay": 0.0})
    bare = crawl / "shard=2"
    bare.mkdir()
    pq.write_table(pq.read_table(crawl / "shard=1" / "pages.parquet"), bare / "pages.parquet")
    (crawl / "outbox" / "to-1").mkdir(parents=True)  # the shard root's routing, not a shard
    assert find_pages_files(crawl) == [crawl / f"shard={k}" / "pages.parquet" for k in range(3)]


def in_process(shards, parts_dir, *, rendered_path=None, config=None, teacher=None):
    """The extract steps over the shards in this process, writing the parts Beam's would."""
    from crawlers.extract import ExtractConfig, extract_page
    from crawlers.extract.crawl_io import iter_shard_records

    rows: dict[str, list] = {name: [] for name in OUTPUT_NAMES}
    cfg = ExtractConfig(**(config or {}))
    for shard in shards:
        for record in iter_shard_records(*shard):
            result = extract_page(record, cfg)
            if result.reject is not None:
                rows["rejects"].append(result.reject)
                continue
            rows["documents"].append(result.document)
            rows["image_refs"] += result.image_refs
            rows["tables"] += result.tables
            rows["interleaved"].append(result.interleaved)
    for name, got in rows.items():
        (parts_dir / name).mkdir(parents=True)
        table = pa.Table.from_pylist(got, schema=OUTPUTS[name])
        pq.write_table(table, parts_dir / name / "part-00000.parquet")


def _two_crawls(tmp_path: Path) -> tuple[Path, Path]:
    first = write_crawl(tmp_path / "first", _pages("127.0.0.1", ["a", "b", "c"]))
    second = write_crawl(tmp_path / "second", _pages("127.0.0.2", ["x"]))
    return first, second


def _killed_after(monkeypatch, module, name: str, n: int) -> None:
    """`module.name` raises (a kill) on its n-th call, after the calls before it did their work."""
    real, calls = getattr(module, name), []

    def killed(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            raise KeyboardInterrupt("killed")
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, killed)


def test_extract_killed_between_two_outputs_leaves_no_manifest_of_the_previous_run(
    tmp_path, monkeypatch
):
    from common import lake

    first, second = _two_crawls(tmp_path)
    out = tmp_path / "out"
    done = run_extract(first, out, "never", execute=in_process)
    assert done.documents == 3 and done.image_refs == 3
    _killed_after(monkeypatch, lake, "write_parquet", 2)  # documents written, then killed
    with pytest.raises(KeyboardInterrupt):
        run_extract(second, out, "never", execute=in_process)
    monkeypatch.undo()
    docs = out / "documents.parquet"
    assert read_manifest(docs)["inputs"] == [str(second)]
    assert pq.read_table(docs).column("url").to_pylist() == ["http://127.0.0.2/x"]
    for name in OUTPUT_NAMES[1:]:  # none of the first run's outputs, nor their manifests
        path = out / f"{name}.parquet"
        assert not manifest_path(path).exists(), name
        assert not path.exists(), name


def test_extract_killed_inside_its_first_write_leaves_nothing_a_reader_takes_as_whole(
    tmp_path, monkeypatch
):
    """Killed after documents.parquet is renamed into place but before its manifest: the new
    documents have no manifest, and no old image_refs.parquet is left for a reader to pair with
    them (both without manifests would be read as another tool's files)."""
    import common.manifest
    from crawlers.images.fetch import load_refs

    first, second = _two_crawls(tmp_path)
    out = tmp_path / "out"
    run_extract(first, out, "never", execute=in_process)
    _killed_after(monkeypatch, common.manifest, "write_manifest", 1)
    with pytest.raises(KeyboardInterrupt):
        run_extract(second, out, "never", execute=in_process)
    monkeypatch.undo()
    assert pq.read_table(out / "documents.parquet").num_rows == 1
    assert not manifest_path(out / "documents.parquet").exists()
    assert not any((out / f"{name}.parquet").exists() for name in OUTPUT_NAMES[1:])
    assert not list(out.glob("*.manifest.json"))
    with pytest.raises(FileNotFoundError, match="image_refs.parquet does not exist"):
        load_refs(out)


def test_a_rerun_after_a_killed_merge_writes_all_five_again(tmp_path, monkeypatch):
    from common import lake

    first, second = _two_crawls(tmp_path)
    out = tmp_path / "out"
    run_extract(first, out, "never", execute=in_process)
    _killed_after(monkeypatch, lake, "write_parquet", 3)
    with pytest.raises(KeyboardInterrupt):
        run_extract(second, out, "never", execute=in_process)
    monkeypatch.undo()
    summary = run_extract(second, out, "never", execute=in_process)
    assert summary.documents == 1 and summary.rejects == 0
    for name in OUTPUT_NAMES:
        man = read_manifest(out / f"{name}.parquet")
        assert man["inputs"] == [str(second)] and man["rows"] == getattr(summary, name), name
    assert not (out / "_parts").exists()
