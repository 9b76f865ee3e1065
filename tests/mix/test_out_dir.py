"""The directory a build writes: only its own (never the lake, an input or someone's folder), a
killed build leaves no manifest the loader would trust, and a rebuild leaves nothing stale."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.stages.mix import default_out
from training.loader import EvalSets, ShardLoader
from training.mixture import builder
from training.mixture.builder import build_mixture
from training.mixture.outdir import IN_PROGRESS
from training.mixture.spec import SpecError, parse_spec

from .conftest import base_spec

pytestmark = pytest.mark.timeout(120)


def _small(lake, **kw):
    return base_spec(lake, total_tokens=4_000, shard_sequences=16, **kw)


@pytest.mark.parametrize("name", [".", "..", "..."])
def test_a_spec_name_of_dots_alone_is_refused_naming_the_field(lake, name):
    with pytest.raises(SpecError, match=r"s\.yaml: invalid mixture spec: name: .* not dots alone"):
        parse_spec(base_spec(lake, name=name), "s.yaml")
    parse_spec(base_spec(lake, name="tiny.v2-x_1"), "s.yaml")  # dots among others are fine


def test_the_default_out_lies_strictly_inside_lake_mixtures(tmp_path):
    mixtures = tmp_path / "lake" / "mixtures"
    mixtures.mkdir(parents=True)
    assert default_out(mixtures, "tiny-pretrain") == mixtures / "tiny-pretrain"
    (mixtures / "escape").symlink_to(tmp_path / "lake")  # a link out of mixtures/
    with pytest.raises(ValueError, match=r"name: 'escape' puts the mixture at .*give --out"):
        default_out(mixtures, "escape")
    with pytest.raises(ValueError, match="not inside"):
        default_out(mixtures, "..")


def test_the_lake_root_is_never_a_mixture_directory(lake, write_spec, tmp_path):
    root = tmp_path / "lake"
    (root / "filter").mkdir(parents=True)
    shutil.copy(lake / "filter" / "documents.parquet", root / "filter" / "documents.parquet")
    (root / "images").mkdir()
    (root / "images" / "keep.png").write_bytes(b"png")
    spec = _small(lake)
    for b in spec["buckets"].values():
        b["sources"][0]["path"] = "lake/filter/documents.parquet"
    path = write_spec(spec)
    for out in (root, tmp_path):  # the lake root, or a directory holding it
        with pytest.raises(SpecError, match=rf"{out}: is \(or holds\) the lake root"):
            build_mixture(path, out, lake_root=root)
    assert (root / "images" / "keep.png").exists() and not (root / "manifest.json").exists()


def test_a_directory_holding_an_input_of_the_build_is_refused(lake, write_spec, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(lake / "filter" / "documents.parquet", data / "docs.parquet")
    spec = _small(lake)
    for b in spec["buckets"].values():
        b["sources"][0]["path"] = str(data / "docs.parquet")
    path = write_spec(spec)
    with pytest.raises(
        SpecError, match=r"holds .*docs\.parquet, an input of the build \(buckets\."
    ):
        build_mixture(path, data)
    tok = tmp_path / "tok"
    tok.mkdir()
    shutil.copy(lake / "tokenizer" / "tokenizer.json", tok / "tokenizer.json")
    with pytest.raises(SpecError, match=r"an input of the build \(tokenizer\)"):
        build_mixture(write_spec(_small(lake, tokenizer=str(tok / "tokenizer.json"))), tmp_path)


def test_an_existing_folder_that_is_no_mixture_is_refused_untouched(lake, write_spec, tmp_path):
    out = tmp_path / "folder"
    (out / "shards").mkdir(parents=True)
    np.save(out / "shards" / "precious.npy", np.arange(4))
    (out / "images").mkdir()
    (out / "images" / "photo.png").write_bytes(b"png")
    path = write_spec(_small(lake))
    with pytest.raises(SpecError, match=r"folder: not empty \(images, shards\) and not a mixture"):
        build_mixture(path, out)
    assert (out / "shards" / "precious.npy").exists() and (out / "images" / "photo.png").exists()
    # an empty directory, and a mixture's own, are taken
    (tmp_path / "empty").mkdir()
    build_mixture(path, tmp_path / "empty")
    build_mixture(path, tmp_path / "empty")


def test_a_killed_rebuild_leaves_no_manifest_and_the_loader_refuses_it(
    lake, write_spec, tmp_path, monkeypatch
):
    out = tmp_path / "mix"
    first = build_mixture(write_spec(_small(lake)), out)
    assert not (out / IN_PROGRESS).exists() and len(first["shards"]) > 1

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed while writing eval sets")

    with monkeypatch.context() as m:
        m.setattr(builder, "_write_eval", killed)
        with pytest.raises(KeyboardInterrupt):
            build_mixture(write_spec(_small(lake, seed=99), "other.yaml"), out)
    assert not (out / "manifest.json").exists() and (out / IN_PROGRESS).exists()
    for read in (lambda: ShardLoader(out, batch_size=4), lambda: EvalSets(out)):
        with pytest.raises(ValueError, match=r"did not finish .*rebuild it with `refinery mix"):
            read()
    # the next build takes the directory again (the marker says it is a mixture's)
    again = build_mixture(write_spec(_small(lake, seed=99), "other.yaml"), out)
    assert not (out / IN_PROGRESS).exists()
    assert len(ShardLoader(out, batch_size=4)) == again["num_sequences"] // 4


def test_a_shard_whose_size_is_not_the_manifests_is_refused(lake, write_spec, tmp_path):
    out = tmp_path / "mix"
    manifest = build_mixture(write_spec(_small(lake)), out)
    shard = out / manifest["shards"][0]["path"]
    with open(shard, "ab") as fh:
        fh.write(b"\0" * 64)  # one sequence more than the manifest says (an old, longer shard)
    with pytest.raises(ValueError, match=rf"{shard}: \d+ bytes, not the \d+ .*refinery mix build"):
        ShardLoader(out, batch_size=4)
    shard.write_bytes(shard.read_bytes()[:100])  # cut inside its first row
    with pytest.raises(ValueError, match=rf"{shard}: .*rebuild it with"):
        ShardLoader(out, batch_size=4)


def test_a_rebuild_leaves_no_image_outputs_of_the_previous_build(lake, write_spec, tmp_path):
    out = tmp_path / "mix"
    build_mixture(write_spec(_small(lake)), out)
    # what a multimodal build left there (the spec has since dropped its image bucket)
    (out / "images" / "ab").mkdir(parents=True)
    (out / "images" / "ab" / "ab12.png").write_bytes(b"png")
    pq.write_table(
        pa.table({"sha256": ["ab12"], "path": ["images/ab/ab12.png"]}), out / "images.parquet"
    )
    old = {
        "bucket": "mm",
        "source": 0,
        "file": "x",
        "row": 1,
        "id": "p",
        "reason": "image_opted_out",
    }
    pq.write_table(pa.Table.from_pylist([old]), out / "rejects.parquet")
    np.save(out / "shards" / "00099.npy", np.zeros((1, 64), np.uint32))
    manifest = build_mixture(write_spec(_small(lake)), out)
    assert not (out / "images").exists() and not (out / "images.parquet").exists()
    assert not (out / "shards" / "00099.npy").exists()
    assert pq.read_table(out / "rejects.parquet").num_rows == manifest["rejects"]["count"] == 0
    assert "images" not in json.loads((out / "manifest.json").read_text())
