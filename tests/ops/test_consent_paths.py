"""Nothing opted out reaches a teacher, a tokenizer or a shard (issue 23): one walk over every
such path with opted-out items of each kind, counting what arrived.

Opted-out items, each carrying its own marker word (or, for images, its own image bytes):
- `flag`: training_allowed is the boolean false;
- `string`: training_allowed is the string "false" (or "true": only the boolean true is consent),
  in files whose flag column is a string;
- `ledger`: the row's own flag is true, but the lake's consent ledger opted its document out
  (by doc_id, by URL, or through its pair's document);
- `noai`: a crawled page that said noai (extraction's LLM path);
- `nan`: a quality_score of NaN under a `quality_score >= 0.5` mixture predicate.
An allowed item of every path must arrive (the count can fail): the walk counts both.

Paths: `refinery extract --llm-url` (the Beam ExtractFn with the stage's ledger), `quality train
--source llm`, `synth tables`, `synth captions`, `synth domain-qa` (each against the fake
teacher), `refinery tokenizer train`, and `mix build` (its tokenizer and its shards) over a text
source and every image source kind, domain_qa without `pairs:`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image

from common.consent import Consent, append_ledger, ledger_files
from tests.extract.pages import article
from tests.synth import fake_teacher
from tests.synth.fake_teacher import request_images, request_text

server = fake_teacher.server  # the fake OpenAI-compatible endpoint (a pytest fixture)
pytestmark = pytest.mark.timeout(240)

ALLOWED = "zqxallowedin"
OUT = {
    "flag": "zqxflagfalse",
    "string": "zqxstringfalse",
    "ledger": "zqxledgerout",
    "noai": "zqxnoaipage",
    "nan": "zqxnanscore",
}
OUT_URL = "http://127.0.0.9/out"  # the ledger opts out this page ...
OUT_DOC = "dout"  # ... and this document id
K = 4  # image tokens


def _png(path: Path, seed: int) -> str:
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 255, size=(10 + seed % 5, 9 + seed % 4, 3), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr).save(path, format="PNG")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _data_url(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()


def _text(marker: str, n: int = 40) -> str:
    return " ".join([f"{marker} river garden light"] * n)


class FlatClip:
    """ClipScorer's interface, every caption scoring 1 (captions are not what is tested here)."""

    def encode_images(self, images):
        return np.ones((len(images), 2), np.float32) / math.sqrt(2), np.ones(len(images), bool)

    def encode_texts(self, texts):
        return np.ones((len(texts), 2), np.float32) / math.sqrt(2)


def _lake(root: Path) -> dict:
    """A lake with a consent ledger, documents, tables, pairs (with images), domain images and
    every synthetic output, each holding allowed and opted-out rows."""
    append_ledger(
        root,
        [
            {"url": OUT_URL, "doc_ids": [OUT_DOC], "training_allowed": False, "previous": True},
            {
                "url": "http://127.0.0.1/out",
                "doc_ids": [OUT_DOC],
                "training_allowed": False,
                "previous": True,
            },
        ],
    )
    paths: dict[str, Path] = {}
    # documents: an allowed row, a false flag, a ledger opt-out by URL and one by id, NaN scores
    docs = []
    for i in range(12):
        docs.append(
            {
                "id": f"dok{i}",
                "url": f"http://127.0.0.1/ok/{i}",
                "text": _text(ALLOWED),
                "training_allowed": True,
                "lang": "en",
                "quality_score": 0.9,
            }
        )
    docs += [
        {
            "id": "dfalse",
            "url": "http://127.0.0.1/f",
            "text": _text(OUT["flag"]),
            "training_allowed": False,
        },
        {
            "id": "dledgerurl",
            "url": "http://127.0.0.1/out",
            "text": _text(OUT["ledger"]),
            "training_allowed": True,
        },
        {
            "id": OUT_DOC,
            "url": "http://127.0.0.1/other",
            "text": _text(OUT["ledger"]),
            "training_allowed": True,
        },
    ]
    docs += [
        {
            "id": f"dnan{i}",
            "url": f"http://127.0.0.1/nan/{i}",
            "text": _text(OUT["nan"]),
            "training_allowed": True,
            "quality_score": float("nan"),
        }
        for i in range(4)
    ]
    for d in docs:
        d.setdefault("lang", "en")
        d.setdefault("quality_score", 0.9)
    (root / "filter").mkdir(parents=True)
    paths["docs"] = root / "filter" / "documents.parquet"
    pq.write_table(pa.Table.from_pylist(docs), paths["docs"])
    strings = [
        {
            "id": f"ds{i}",
            "url": f"http://127.0.0.1/s/{i}",
            "text": _text(OUT["string"]),
            "training_allowed": flag,
            "lang": "en",
            "quality_score": 0.9,
        }
        for i, flag in enumerate(["false", "true", "1"])
    ]
    paths["docs_str"] = root / "filter" / "strings.parquet"
    pq.write_table(pa.Table.from_pylist(strings), paths["docs_str"])

    # extracted tables: allowed, false flag, ledger (doc_id); and a file with string flags
    def table(doc: str, marker: str, flag) -> dict:
        cells = [["name", "score"], [f"{marker} a", "1"], [f"{marker} b", "2"], ["c", "3"]]
        md = "\n".join("| " + " | ".join(r) + " |" for r in cells)
        return {
            "doc_id": doc,
            "url": f"http://127.0.0.1/{doc}",
            "table_index": 0,
            "markdown": md,
            "header": cells[0],
            "cells": cells,
            "n_rows": 4,
            "n_cols": 2,
            "training_allowed": flag,
        }

    paths["tables"] = root / "extract"
    paths["tables"].mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist(
            [
                table("dok0", ALLOWED, True),
                table("dfalse", OUT["flag"], False),
                table(OUT_DOC, OUT["ledger"], True),
            ]
        ),
        paths["tables"] / "tables.parquet",
    )
    paths["tables_str"] = root / "extract_str"
    paths["tables_str"].mkdir()
    pq.write_table(
        pa.Table.from_pylist(
            [table("ds0", OUT["string"], "false"), table("ds1", OUT["string"], "true")]
        ),
        paths["tables_str"] / "tables.parquet",
    )

    # image pairs: allowed (two), false flag, ledger by doc_id; a second shard with string flags
    pairs_dir = root / "images" / "pairs" / "shard=0"
    images: dict[str, list[Path]] = {"allowed": [], "out": []}
    pairs = []
    for i, (doc, marker, flag) in enumerate(
        [
            ("dok0", ALLOWED, True),
            ("dok1", ALLOWED, True),
            ("dfalse", OUT["flag"], False),
            (OUT_DOC, OUT["ledger"], True),
        ]
    ):
        rel = f"images/p{i}.png"
        sha = _png(pairs_dir / rel, i)
        images["allowed" if marker == ALLOWED else "out"].append(pairs_dir / rel)
        pairs.append(
            {
                "id": f"{doc}-{i}",  # crawlers.images.fetch.ref_id: '<doc_id>-<position>'
                "doc_id": doc,
                "src": f"http://127.0.0.1/img/{i}.png",
                "caption": f"{marker} a picture of a river garden",
                "image_sha256": sha,
                "image_path": rel,
                "training_allowed": flag,
                "drop_reason": None,
            }
        )
    pq.write_table(pa.Table.from_pylist(pairs), pairs_dir / "pairs.parquet")
    str_dir = root / "images_str" / "pairs" / "shard=0"
    str_pairs = []
    for i, flag in enumerate(["false", "true"]):
        rel = f"images/s{i}.png"
        sha = _png(str_dir / rel, 50 + i)
        images["out"].append(str_dir / rel)
        str_pairs.append(
            {
                "id": f"ds{i}-0",
                "doc_id": f"ds{i}",
                "caption": f"{OUT['string']} a picture",
                "image_sha256": sha,
                "image_path": rel,
                "training_allowed": flag,
                "drop_reason": None,
            }
        )
    pq.write_table(pa.Table.from_pylist(str_pairs), str_dir / "pairs.parquet")
    paths["pairs"], paths["pairs_str"], paths["images"] = pairs_dir, str_dir, images

    # domain images (their `id` is the pair id), all flagged true: the pairs decide
    dom = [
        {
            "id": p["id"],
            "domain": "nature",
            "caption": p["caption"],
            "selected": True,
            "training_allowed": True,
        }
        for p in pairs
    ]
    (root / "images" / "domain").mkdir(parents=True)
    paths["domains"] = root / "images" / "domain" / "domain_images.parquet"
    pq.write_table(pa.Table.from_pylist(dom), paths["domains"])
    dom_str = [
        {
            "id": p["id"],
            "domain": "nature",
            "caption": p["caption"],
            "selected": True,
            "training_allowed": True,
        }
        for p in str_pairs
    ]
    (root / "images_str" / "domain").mkdir(parents=True)
    paths["domains_str"] = root / "images_str" / "domain" / "domain_images.parquet"
    pq.write_table(pa.Table.from_pylist(dom_str), paths["domains_str"])

    # interleaved documents: allowed, false flag, ledger by doc_id
    inter = [
        {
            "doc_id": doc,
            "url": f"http://127.0.0.1/i/{doc}",
            "blocks": [
                {"kind": "text", "text": _text(marker, 6), "pair_id": None},
                {"kind": "image", "text": None, "pair_id": pairs[0]["id"]},
            ],
            "training_allowed": flag,
        }
        for doc, marker, flag in [
            ("dok0", ALLOWED, True),
            ("dfalse", OUT["flag"], False),
            (OUT_DOC, OUT["ledger"], True),
        ]
    ]
    (root / "images" / "interleaved").mkdir(parents=True)
    paths["interleaved"] = root / "images" / "interleaved" / "interleaved.parquet"
    pq.write_table(pa.Table.from_pylist(inter), paths["interleaved"])

    # synthetic outputs as the synth stages write them (table pairs, captions, domain QA)
    qa_type = pa.list_(
        pa.struct(
            [
                ("question", pa.string()),
                ("answer", pa.string()),
                ("kind", pa.string()),
                ("verified", pa.bool_()),
                ("answerable", pa.bool_()),
            ]
        )
    )

    def qa(marker: str) -> list[dict]:
        return [
            {
                "question": "What?",
                "answer": f"{marker} river",
                "kind": "lookup",
                "verified": True,
                "answerable": True,
            }
        ]

    synth = root / "synth"
    tp = []
    for i, (doc, marker, flag) in enumerate(
        [("dok0", ALLOWED, True), ("dfalse", OUT["flag"], False), (OUT_DOC, OUT["ledger"], True)]
    ):
        rel = f"images/t{i}.png"
        _png(synth / "tables" / rel, 100 + i)
        tp.append(
            {
                "id": f"{doc}#t0",
                "doc_id": doc,
                "table_index": 0,
                "markdown": f"| {marker} |",
                "image_path": rel,
                "qa": qa(marker),
                "training_allowed": flag,
                "status": "ok",
            }
        )
    pq.write_table(
        pa.Table.from_pylist(
            tp,
            schema=pa.schema(
                [
                    ("id", pa.string()),
                    ("doc_id", pa.string()),
                    ("table_index", pa.int32()),
                    ("markdown", pa.string()),
                    ("image_path", pa.string()),
                    ("qa", qa_type),
                    ("training_allowed", pa.bool_()),
                    ("status", pa.string()),
                ]
            ),
        ),
        synth / "tables" / "table_pairs.parquet",
    )
    (synth / "captions").mkdir(parents=True)
    caps = [
        {
            "pair_id": p["id"],
            "level": "brief",
            "caption": p["caption"],
            "status": "ok",
            "image_path": None,
        }
        for p in pairs
    ]
    pq.write_table(pa.Table.from_pylist(caps), synth / "captions" / "captions.parquet")
    dqa = []
    for i, p in enumerate(pairs):
        rel = f"images/q{i}.png"
        _png(synth / "domain_qa" / rel, 200 + i)
        marker = p["caption"].split()[0]
        dqa.append(
            {
                "id": f"{p['id']}#nature",
                "pair_id": p["id"],
                "domain": "nature",
                "image_path": rel,
                "qa": qa(marker),
                "training_allowed": p["training_allowed"],
                "status": "ok",
            }
        )
    pq.write_table(
        pa.Table.from_pylist(
            dqa,
            schema=pa.schema(
                [
                    ("id", pa.string()),
                    ("pair_id", pa.string()),
                    ("domain", pa.string()),
                    ("image_path", pa.string()),
                    ("qa", qa_type),
                    ("training_allowed", pa.bool_()),
                    ("status", pa.string()),
                ]
            ),
        ),
        synth / "domain_qa" / "domain_qa.parquet",
    )
    paths["synth"] = synth
    return paths


def _arrived(requests: list[dict], images: dict[str, list[Path]] | None = None) -> dict[str, int]:
    """Requests carrying each marker (and, with images, each image group's data URLs)."""
    texts = [request_text(r["body"]) for r in requests]
    out = {k: sum(m in t for t in texts) for k, m in [("allowed", ALLOWED), *OUT.items()]}
    if images:
        sent = {u for r in requests for u in request_images(r["body"])}
        out["allowed_images"] = sum(_data_url(p) in sent for p in images["allowed"])
        out["out_images"] = sum(_data_url(p) in sent for p in images["out"])
    return out


def _leaks(counts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if k not in ("allowed", "allowed_images") and v}


@pytest.fixture
def walk_lake(tmp_path) -> dict:
    """The lake, built (and the heavy modules imported: open_clip for captions, Beam for
    extraction) before the fake teacher starts, whose watchdog stops it after 60 s."""
    import pipelines.beam.extract  # noqa: F401
    import training.coca  # noqa: F401

    return _lake(tmp_path / "lake")


def test_nothing_opted_out_reaches_a_teacher_a_tokenizer_or_a_shard(walk_lake, server, tmp_path):
    from common.teacher import TeacherClient
    from pipelines.beam.extract import ExtractFn
    from pipelines.stage import Lake
    from pipelines.stages.extract import _with_ledger
    from pipelines.stages.synth import input_consent
    from synth.captions import make_captions
    from synth.domain_qa import make_domain_qa
    from synth.tables import make_table_pairs
    from training.mixture.builder import build_mixture
    from training.mixture.run import run_tokenizer_train

    root, p = tmp_path / "lake", walk_lake
    lake = Lake(root=root)
    report: dict[str, dict[str, int]] = {}

    def client(consent) -> TeacherClient:
        return TeacherClient(server["base_url"], "tiny", timeout=60, max_retries=0, consent=consent)

    def walk(name: str, run, images=None) -> None:
        before = len(server["requests"])
        run()
        report[name] = _arrived(server["requests"][before:], images)

    # 1. refinery extract --llm-url: the Beam DoFn as the stage configures it (ledger included)
    teacher = {"base_url": server["base_url"], "model": "tiny", "hosts": ["127.0.0.9"]}
    fn = ExtractFn(
        None,
        json.dumps({"favor": "balanced"}),
        json.dumps(_with_ledger(teacher, root, root / "crawl")),
    )
    fn.setup()
    pages = [
        ("http://127.0.0.9/ok", ALLOWED, {"training_allowed": True}),
        ("http://127.0.0.9/f", OUT["flag"], {"training_allowed": False}),
        ("http://127.0.0.9/s", OUT["string"], {"training_allowed": "false"}),
        ("http://127.0.0.9/s1", OUT["string"], {"training_allowed": "true"}),
        ("http://127.0.0.9/n", OUT["noai"], {"training_allowed": True, "noai": True}),
        (OUT_URL, OUT["ledger"], {"training_allowed": True}),
    ]

    def extract():
        for url, marker, flags in pages:
            body = article(extra=f"<p>{_text(marker, 5)}</p>").encode()
            list(fn.process({"url": url, "status": 200, "body": body, **flags}))

    walk("extract --llm-url", extract)

    # 2. quality train --source llm (the stage's consent: the lake's ledger)
    from filters.labels import LabelOptions, build_training_set

    rows = [
        {
            "id": f"q{i}",
            "url": f"http://127.0.0.1/q/{i}",
            "text": _text(ALLOWED, 3) + f" n{i}",
            "lang": "en",
            "training_allowed": True,
        }
        for i in range(4)
    ] + [
        {
            "id": "qf",
            "url": "http://127.0.0.1/qf",
            "text": _text(OUT["flag"], 3),
            "lang": "en",
            "training_allowed": False,
        },
        {
            "id": "qs",
            "url": "http://127.0.0.1/qs",
            "text": _text(OUT["string"], 3),
            "lang": "en",
            "training_allowed": "false",
        },
        {
            "id": OUT_DOC,
            "url": "http://127.0.0.1/qd",
            "text": _text(OUT["ledger"], 3),
            "lang": "en",
            "training_allowed": True,
        },
        {
            "id": "ql",
            "url": "http://127.0.0.1/out",
            "text": _text(OUT["ledger"], 3) + " url",
            "lang": "en",
            "training_allowed": True,
        },
    ]
    opts = LabelOptions(
        teacher_url=server["base_url"], teacher_model="tiny", consent=input_consent(lake)
    )
    server["default"] = ("ok", "4")
    walk("quality train --source llm", lambda: build_training_set(rows, "en", "llm", opts))
    server["default"] = ("ok", "hello")

    # 3. synth tables (the stage's consent: the ledger of the input's lake)
    def tables():
        for src in (p["tables"], p["tables_str"]):
            consent = input_consent(Lake(root=tmp_path / "elsewhere"), src)
            make_table_pairs(
                src,
                tmp_path / f"tp-{src.name}",
                teacher=client(consent),
                render=False,
                consent=consent,
            )

    walk("synth tables", tables)

    # 4. synth captions (detailed level: the teacher sees every image it captions)
    def captions():
        for src in (p["pairs"], p["pairs_str"]):
            consent = input_consent(lake, src)
            make_captions(
                [src],
                tmp_path / f"cap-{src.parent.parent.name}",
                ["detailed"],
                clip=FlatClip(),
                teacher=client(consent),
                consent=consent,
            )

    walk("synth captions", captions, p["images"])

    # 5. synth domain-qa
    def domain_qa():
        for dom, src in ((p["domains"], p["pairs"]), (p["domains_str"], p["pairs_str"])):
            consent = input_consent(lake, dom, src)
            make_domain_qa(
                dom,
                [src],
                tmp_path / f"dqa-{src.parent.parent.name}",
                client(consent),
                templates=0,
                adversarial=0,
                consent=consent,
                workers=1,
            )

    walk("synth domain-qa", domain_qa, p["images"])

    # 6. refinery tokenizer train: the vocabulary learns no opted-out word
    tok = run_tokenizer_train(
        tmp_path / "tok.json",
        vocab_size=300,
        sources=[p["docs"], p["docs_str"]],
        sample_tokens=20_000,
        lake_root=root,
    )
    vocab = json.loads(Path(tok.path).read_text())["model"]["vocab"]
    words = [("allowed", ALLOWED), *((k, m) for k, m in OUT.items() if k != "nan")]
    # (NaN-scored rows are consented: only a predicate turns them away, and tokenizers have none)
    report["tokenizer train"] = {k: sum(m[:6] in v for v in vocab) for k, m in words}

    # 7. mix build: its own tokenizer and shards, a text source under a NaN-prone predicate and
    #    every image source kind (domain_qa without `pairs:`)
    pairs_glob = str(root / "images/pairs/*/pairs.parquet")
    s = p["synth"]
    spec = {
        "name": "consent-walk",
        "seq_len": 32,
        "total_tokens": 4_000,
        "seed": 1,
        "image_tokens": K,
        "shard_sequences": 40,
        "allow_shortfall": True,
        "tokenizer": {
            "train": {
                "vocab_size": 300,
                "sample_tokens": 20_000,
                "sources": [str(p["docs"]), str(p["docs_str"])],
            }
        },
        "buckets": {
            "text": {
                "weight": 0.5,
                "sources": [
                    {"path": "lake/filter/documents.parquet", "where": "quality_score >= 0.5"},
                    {"path": "lake/filter/strings.parquet", "optional": True},
                ],
            },
            "interleaved": {
                "weight": 0.1,
                "modality": "interleaved",
                "sources": [
                    {"path": str(p["interleaved"]), "kind": "interleaved", "pairs": pairs_glob}
                ],
            },
            "image_caption": {
                "weight": 0.3,
                "modality": "image_caption",
                "sources": [
                    {"path": pairs_glob, "kind": "pairs", "text_column": "caption"},
                    {
                        "path": str(s / "captions/captions.parquet"),
                        "kind": "captions",
                        "pairs": pairs_glob,
                    },
                    {"path": str(s / "tables/table_pairs.parquet"), "kind": "tables"},
                ],
            },
            "domain_image_text": {
                "weight": 0.1,
                "modality": "domain_image_text",
                "sources": [
                    {
                        "path": str(p["domains"]),
                        "kind": "domain_images",
                        "text_column": "caption",
                        "pairs": pairs_glob,
                    },
                    {"path": str(s / "domain_qa/domain_qa.parquet"), "kind": "domain_qa"},
                ],
            },
        },
    }
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    mix = tmp_path / "mix"
    manifest = build_mixture(spec_path, mix, lake_root=root)
    vocab = json.loads((mix / "tokenizer.json").read_text())["model"]["vocab"]
    report["mix build tokenizer"] = {k: sum(m[:6] in v for v in vocab) for k, m in words}
    from tokenizers import Tokenizer

    tk = Tokenizer.from_file(str(mix / "tokenizer.json"))
    text = "\n".join(
        tk.decode(row.tolist())
        for e in manifest["shards"] + manifest["eval"]
        for row in np.load(mix / e["path"])
    )
    report["mix build shards"] = {k: text.count(m) for k, m in [("allowed", ALLOWED), *OUT.items()]}
    assert manifest["consent_ledger"]["files"] == len(ledger_files(root)) == 1

    leaks = {name: _leaks(c) for name, c in report.items() if _leaks(c)}
    assert leaks == {}, json.dumps(report, indent=1)
    # every path carried its allowed items (the counts above could see a leak)
    for name, counts in report.items():
        assert counts["allowed"] or counts.get("allowed_images"), (name, counts)
    assert report["synth captions"]["allowed_images"] == 2
    assert report["synth domain-qa"]["allowed_images"] == 2


def test_consent_rule_in_sql_matches_the_python_rule(tmp_path):
    """The mixture's SQL rule (sources.consent_sql) and common.consent agree row by row: the
    boolean true only (not 'true', 't', 1), the ledger by doc_id, id, pair id or URL."""
    import duckdb

    from training.mixture.sources import ReadUnit, allowed_rows_sql

    append_ledger(
        tmp_path,
        [{"url": "http://x/out", "doc_ids": ["d9"], "training_allowed": False, "previous": True}],
    )
    consent = Consent.load(tmp_path)
    cases = {
        "bool": (
            pa.array([True, False, None, True, True, True]),
            ["a", "b", "c", "d9", "d9-3", "d9-3#nature"],
        ),
        "string": (
            pa.array(["true", "t", "false", None, "1", "yes"]),
            ["a", "b", "c", "d", "e", "f"],
        ),
        "int": (pa.array([1, 0, 1, None, 1, 1], pa.int64()), ["a", "b", "c", "d", "e", "f"]),
    }
    for name, (flags, ids) in cases.items():
        f = tmp_path / f"{name}.parquet"
        urls = [
            "http://x/ok",
            "http://x/ok",
            "http://x/ok",
            "http://x/ok",
            "http://x/out",
            "http://x/ok",
        ]
        score = [0.9, float("nan"), 0.2, 0.9, None, 0.9]
        pq.write_table(
            pa.table({"pair_id": ids, "url": urls, "training_allowed": flags, "s": score}), f
        )
        unit = ReadUnit(
            "b", 0, str(f), None, "url", None, (), tuple(map(str, ledger_files(tmp_path)))
        )
        con = duckdb.connect()
        got = con.execute(f"SELECT pair_id, s FROM ({allowed_rows_sql(unit)})", [str(f)]).fetchall()
        want = [
            r["pair_id"]
            for r in pq.read_table(f).to_pylist()
            if consent.allows(r)  # the document a pair / QA id names, as the SQL derives it
        ]
        assert [g[0] for g in got] == want, name
        assert all(s is None or not math.isnan(s) for _, s in got)  # NaN reads as NULL
        nan = con.execute(
            f"SELECT count(*) FROM ({allowed_rows_sql(unit)}) WHERE s >= 0.5", [str(f)]
        ).fetchone()[0]
        assert nan == sum(1 for g in got if g[1] is not None and g[1] >= 0.5)
        con.close()
    # only the boolean file offers rows: 'a' (d9 by pair id, d9-3 and its QA row by derived id)
    assert [
        r[0]
        for r in duckdb.connect()
        .execute(
            f"SELECT pair_id FROM ({allowed_rows_sql(ReadUnit('b', 0, str(tmp_path / 'bool.parquet'), None, 'url', None, (), tuple(map(str, ledger_files(tmp_path)))))})",
            [str(tmp_path / "bool.parquet")],
        )
        .fetchall()
    ] == ["a"]


def test_teacher_client_asks_the_one_consent_rule(server, tmp_path):
    """send_allowed is common.consent's rule (NumPy's true is consent; strings and 1 are not),
    and a client given the lake's ledger refuses a ledger-opted-out item before any request."""
    from common.teacher import TeacherClient, TeacherError, send_allowed

    assert send_allowed({"training_allowed": np.True_}) and send_allowed({"training_allowed": True})
    for flag in (np.False_, "true", "false", 1, None, float("nan")):
        assert not send_allowed({"training_allowed": flag}), flag
    append_ledger(tmp_path, [{"url": OUT_URL, "doc_ids": [OUT_DOC], "training_allowed": False}])
    client = TeacherClient(server["base_url"], "tiny", timeout=30, consent=Consent.load(tmp_path))
    hi = [{"role": "user", "content": "hi"}]
    for item in (
        {"doc_id": OUT_DOC, "training_allowed": True},
        {"url": OUT_URL, "training_allowed": True},
    ):
        with pytest.raises(TeacherError, match="consent ledger opted out"):
            client.chat(hi, items=[item])
    assert server["requests"] == []
    assert client.chat(hi, items=[{"doc_id": "dok0", "training_allowed": np.True_}]) == "hello"
