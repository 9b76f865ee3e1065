"""`refinery mix export`: a mixture written as Megatron-LM indexed dataset, MosaicML streaming
MDS and Hugging Face datasets, each read back by the real library (megatron-core's
IndexedDataset, `datasets.load_dataset`) or, for MDS, a reader written from streaming's format
description (mosaicml-streaming needs transformers < 5, which the project's pins rule out), and
compared token by token and boundary by boundary with the shards."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from training.mixture.builder import build_mixture
from training.mixture.export import export_mixture, packed_rows

from .conftest import base_spec

pytestmark = pytest.mark.timeout(180)

STAGES = [
    {"name": "warm", "until": 0.4, "weights": {"web": 1.0, "multilingual": 0.0}},
    {"name": "rest", "until": 1.0, "weights": {"web": 0.3, "multilingual": 0.7}},
]


@pytest.fixture(scope="module")
def mixture(lake, tmp_path_factory):
    """A two-stage mixture in several shards, with eval sets; and what its shards hold, split at
    the boundary token independently of the export code."""
    d = tmp_path_factory.mktemp("export")
    spec = d / "spec.yaml"
    spec.write_text(yaml.safe_dump(base_spec(lake, shard_sequences=40, stages=STAGES)))
    manifest = build_mixture(spec, d / "mix")
    return d / "mix", manifest


def _expected(mix: Path, manifest: dict) -> dict[str, dict]:
    """Per dataset: its documents (list of arrays), per stage its rows, and the padding."""
    boundary, pad = manifest["special_tokens"]["boundary"], manifest["special_tokens"]["pad"]
    groups: dict[str, list[tuple[str, np.ndarray]]] = {"train": []}
    for s in manifest["shards"]:
        groups["train"].append((s["stage"], np.load(mix / s["path"])))
    for e in manifest["eval"]:
        name = f"eval/{e['bucket']}.{e['group']}"
        groups[name] = [(name, np.load(mix / e["path"]))]
    out = {}
    for name, arrays in groups.items():
        docs, rows = [], {}
        for stage in dict.fromkeys(st for st, _ in arrays):
            stream = np.concatenate([a.reshape(-1) for st, a in arrays if st == stage])
            rows[stage] = np.concatenate([a for st, a in arrays if st == stage])
            cut = [i + 1 for i, t in enumerate(stream.tolist()) if t == boundary]
            last = cut[-1] if cut else 0
            tail = stream[last:].tolist()
            while tail and tail[-1] == pad:  # padding, after the start of a cut document if any
                tail.pop()
            if tail:
                cut.append(last + len(tail))
            docs += [stream[a:b] for a, b in zip([0, *cut[:-1]], cut, strict=True)]
        out[name] = {"docs": docs, "rows": rows}
    return out


def _check(read: dict[str, list[np.ndarray]], mix: Path, manifest: dict, export: dict):
    """Every token and every document boundary of every dataset, and the shards rebuilt."""
    expected = _expected(mix, manifest)
    assert sorted(read) == sorted(expected)
    pad, seq_len = manifest["special_tokens"]["pad"], manifest["seq_len"]
    described = {d["name"]: d for d in export["datasets"]}
    for name, want in expected.items():
        got = read[name]
        assert len(got) == len(want["docs"]) == described[name]["documents"], name
        for g, w in zip(got, want["docs"], strict=True):
            assert np.array_equal(np.asarray(g, dtype=np.int64), w.astype(np.int64))
        rebuilt = dict(packed_rows(iter(got), described[name]["stages"], seq_len, pad))
        assert sorted(rebuilt) == sorted(want["rows"])
        for stage, rows in want["rows"].items():
            assert rebuilt[stage].dtype == np.uint32 and np.array_equal(rebuilt[stage], rows)
    return expected


@pytest.mark.slow  # megatron-core's import alone is ~9 s of CPU (torch and its modules)
def test_megatron_export_reads_back_with_megatron_core(mixture, tmp_path):
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    mix, manifest = mixture
    export = export_mixture(mix, "megatron", tmp_path / "meg")
    read = {}
    for d in export["datasets"]:
        ds = IndexedDataset(str(tmp_path / "meg" / d["name"]))
        assert ds.document_indices.tolist() == list(range(len(ds) + 1))  # a document a sequence
        assert ds[0].dtype == np.uint16  # a 600-token vocabulary
        # copies: the arrays are views of a map that closes with the dataset
        read[d["name"]] = [np.array(ds[i]) for i in range(len(ds))]
        del ds
    expected = _check(read, mix, manifest, export)
    boundary = manifest["special_tokens"]["boundary"]
    assert all(doc[-1] == boundary for doc in read["train"])
    assert len(read["train"]) == len(expected["train"]["docs"]) > 50


def _mds_read(root: Path) -> list[np.ndarray]:
    """MDS by its format description (streaming's mds/README and encodings): index.json lists
    shards; a shard is u32 sample count, u32 offsets (count + 1, from the file start), the
    config JSON, then samples; a sample is u32 sizes of its variable-size columns, then the
    columns; ndarray:<dtype> is [ndim << 2 | shape dtype code][shape][values]."""
    index = json.loads((root / "index.json").read_text())
    assert index["version"] == 2
    docs = []
    for shard in index["shards"]:
        assert shard["format"] == "mds" and shard["compression"] is None
        names, encodings = shard["column_names"], shard["column_encodings"]
        data = (root / shard["raw_data"]["basename"]).read_bytes()
        assert len(data) == shard["raw_data"]["bytes"]
        (n,) = struct.unpack_from("<I", data, 0)
        assert n == shard["samples"]
        offsets = struct.unpack_from(f"<{n + 1}I", data, 4)
        config = json.loads(data[4 + 4 * (n + 1) : offsets[0]])
        assert config["column_names"] == names
        for a, b in zip(offsets[:-1], offsets[1:], strict=True):
            sample = data[a:b]
            variable = [s is None for s in shard["column_sizes"]]
            sizes = list(struct.unpack_from(f"<{sum(variable)}I", sample, 0))
            pos = 4 * sum(variable)
            row = {}
            for name, enc, size in zip(names, encodings, shard["column_sizes"], strict=True):
                size = size if size is not None else sizes.pop(0)
                raw = sample[pos : pos + size]
                pos += size
                kind, dtype = enc.split(":")[:2]
                assert kind == "ndarray"
                head = raw[0]
                ndim, shape_code = head >> 2, head & 3
                shape_dtype = np.dtype(["<u1", "<u2", "<u4", "<u8"][shape_code])
                shape = np.frombuffer(raw, shape_dtype, count=ndim, offset=1)
                start = 1 + ndim * shape_dtype.itemsize
                row[name] = np.frombuffer(raw[start:], np.dtype(dtype)).reshape(shape)
            assert pos == len(sample)
            docs.append(row["tokens"])
    return docs


def test_mds_export_reads_back_by_the_format_description(mixture, tmp_path):
    mix, manifest = mixture
    export = export_mixture(mix, "mds", tmp_path / "mds")
    read = {d["name"]: _mds_read(tmp_path / "mds" / d["name"]) for d in export["datasets"]}
    _check(read, mix, manifest, export)


def test_mds_export_rolls_shards_at_the_size_limit(mixture, tmp_path, monkeypatch):
    from training.mixture import export as mod

    mix, manifest = mixture
    monkeypatch.setattr(mod, "MDS_SIZE_LIMIT", 4096)
    export = export_mixture(mix, "mds", tmp_path / "mds")
    train = tmp_path / "mds" / "train"
    assert len(json.loads((train / "index.json").read_text())["shards"]) > 3
    assert all(p.stat().st_size <= 4096 for p in train.glob("shard.*.mds"))
    _check({"train": _mds_read(train)} | {
        d["name"]: _mds_read(tmp_path / "mds" / d["name"]) for d in export["datasets"][1:]
    }, mix, manifest, export)  # fmt: skip


def test_hf_export_loads_with_datasets(mixture, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    import datasets

    from training.mixture import export as mod

    monkeypatch.setattr(mod, "HF_FILE_TOKENS", 3000)  # several files, several row groups each
    monkeypatch.setattr(mod, "HF_ROW_GROUP", 16)
    mix, manifest = mixture
    export = export_mixture(mix, "hf", tmp_path / "hf")
    train_files = [d["files"] for d in export["datasets"] if d["name"] == "train"][0]
    assert len(train_files) > 3 and train_files[-1].endswith(f"-of-{len(train_files):05d}.parquet")
    loaded = datasets.load_dataset(str(tmp_path / "hf"), cache_dir=str(tmp_path / "cache"))
    splits = {d["split"]: d["name"] for d in export["datasets"]}
    assert sorted(loaded) == sorted(splits)
    read = {
        splits[s]: [np.array(r, dtype=np.int64) for r in loaded[s]["input_ids"]] for s in loaded
    }
    _check(read, mix, manifest, export)


def test_refinery_mix_export_cli_and_its_errors(mixture, tmp_path):
    from pipelines.cli import app

    mix, _ = mixture
    out = tmp_path / "meg"
    res = CliRunner().invoke(
        app, ["mix", "export", str(mix), "--format", "megatron", "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert "train" in res.output and (out / "train.idx").exists()
    again = CliRunner().invoke(
        app, ["mix", "export", str(mix), "--format", "megatron", "--out", str(out)]
    )
    assert again.exit_code == 0  # a previous export is replaced
    bad = CliRunner().invoke(
        app, ["mix", "export", str(mix), "--format", "tfrecord", "--out", str(out)]
    )
    assert bad.exit_code == 2 and "--format 'tfrecord'" in bad.output
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    busy = CliRunner().invoke(
        app, ["mix", "export", str(mix), "--format", "hf", "--out", str(tmp_path / "busy")]
    )
    assert busy.exit_code == 2 and (tmp_path / "busy" / "keep.txt").exists()
    inside = CliRunner().invoke(
        app, ["mix", "export", str(mix), "--format", "hf", "--out", str(mix / "x")]
    )
    assert inside.exit_code == 2 and "inside" in inside.output


def test_a_mixture_with_images_is_refused_naming_the_field(mixture, tmp_path):
    mix, manifest = mixture
    fake = tmp_path / "img"
    fake.mkdir()
    (fake / "manifest.json").write_text(json.dumps({**manifest, "image_tokens": 4}))
    with pytest.raises(ValueError, match="image_tokens 4"):
        export_mixture(fake, "hf", tmp_path / "out")


def test_eval_names_come_from_the_files_not_the_group_values(mixture, tmp_path):
    import shutil

    mix, manifest = mixture
    copy = tmp_path / "mix"
    shutil.copytree(mix, copy)
    hostile = dict(manifest)
    hostile["eval"] = [dict(e) for e in manifest["eval"]]
    hostile["eval"][0]["group"] = "../../../escaped"
    (copy / "manifest.json").write_text(json.dumps(hostile))
    export = export_mixture(copy, "mds", tmp_path / "out" / "mds")
    names = [d["name"] for d in export["datasets"]]
    assert names[0] == "train" and all(n.startswith("eval/") and ".." not in n for n in names[1:])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mix", "out"]
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["mds"]


def _megatron_read(prefix: Path) -> list[np.ndarray]:
    """The .idx/.bin pair by megatron-core's IndexedDataset layout: header MMIDIDX\\0\\0, u64
    version 1, u8 dtype code, u64 sequences, u64 document indices, then int32 lengths, int64
    byte pointers into .bin, int64 document indices."""
    idx = Path(f"{prefix}.idx").read_bytes()
    assert idx[:9] == b"MMIDIDX\x00\x00"
    version, code, n, m = struct.unpack_from("<QBQQ", idx, 9)
    assert version == 1 and m == n + 1
    dtype = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 8: np.uint16}[code]
    pos = 9 + 8 + 1 + 8 + 8
    lengths = np.frombuffer(idx, np.int32, n, pos)
    pointers = np.frombuffer(idx, np.int64, n, pos + 4 * n)
    doc_index = np.frombuffer(idx, np.int64, m, pos + 12 * n)
    assert pos + 12 * n + 8 * m == len(idx) and doc_index.tolist() == list(range(m))
    data = Path(f"{prefix}.bin").read_bytes()
    return [
        np.frombuffer(data, dtype, int(k), int(p)) for k, p in zip(lengths, pointers, strict=True)
    ]


def test_megatron_export_reads_back_by_the_index_layout(mixture, tmp_path):
    mix, manifest = mixture
    export = export_mixture(mix, "megatron", tmp_path / "meg")
    read = {d["name"]: _megatron_read(tmp_path / "meg" / d["name"]) for d in export["datasets"]}
    _check(read, mix, manifest, export)
