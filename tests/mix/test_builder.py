"""Building mixtures: shares, determinism, consent, eval hold-out, curriculum, shard format."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from training.mixture.builder import build_mixture

from .conftest import OPTED_OUT_MARKER, base_spec

pytestmark = pytest.mark.timeout(120)


def _decoded_shards(out: Path, manifest: dict) -> str:
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    arrays = [np.load(out / s["path"], mmap_mode="r") for s in manifest["shards"]]
    arrays += [np.load(out / e["path"], mmap_mode="r") for e in manifest["eval"]]
    return "".join(tok.decode(a.reshape(-1).tolist(), skip_special_tokens=True) for a in arrays)


@pytest.fixture(scope="module")
def built(lake, tmp_path_factory):
    import yaml

    d = tmp_path_factory.mktemp("built")
    spec = d / "spec.yaml"
    spec.write_text(yaml.safe_dump(base_spec(lake)))
    return d / "out", build_mixture(spec, d / "out"), spec


def test_shards_are_uint32_seq_len_arrays_listed_with_hashes(built):
    out, manifest, _ = built
    total = 0
    for s in manifest["shards"]:
        arr = np.load(out / s["path"], mmap_mode="r")
        assert arr.dtype == np.uint32 and arr.shape == (s["num_sequences"], 64)
        assert hashlib.sha256((out / s["path"]).read_bytes()).hexdigest() == s["sha256"]
        total += arr.shape[0]
    assert total == manifest["num_sequences"]
    tok_sha = hashlib.sha256((out / "tokenizer.json").read_bytes()).hexdigest()
    assert manifest["tokenizer_sha256"] == tok_sha  # a copied tokenizer: its bytes' sha256
    slots = total * 64
    assert manifest["tokens"] + manifest["boundary_tokens"] + manifest["padding_tokens"] == slots


def test_realised_shares_match_spec_within_tolerance(built):
    _, manifest, _ = built
    assert manifest["checks"] and all(c["ok"] for c in manifest["checks"])
    b = manifest["buckets"]
    assert b["web"]["tokens"] / manifest["tokens"] == pytest.approx(0.6, abs=0.01)
    ml = b["multilingual"]["groups"]
    # temperature 3 over the training-available tokens of each language
    avail = {g: v["available_tokens"] - v["heldout_tokens"] for g, v in ml.items()}
    raw = {g: a ** (1 / 3) for g, a in avail.items()}
    for g in ml:
        want = 0.4 * raw[g] / sum(raw.values())
        assert ml[g]["tokens"] / manifest["tokens"] == pytest.approx(want, abs=0.01)


def test_opted_out_rows_never_reach_shards_or_eval(built, lake):
    out, manifest, _ = built
    text = _decoded_shards(out, manifest)
    assert len(text) > 10_000
    assert OPTED_OUT_MARKER not in text
    # and the marker does survive tokenization, so the check could fail
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert OPTED_OUT_MARKER in tok.decode(tok.encode(f"a {OPTED_OUT_MARKER} b").ids)


def test_eval_sets_are_written_per_group_and_held_out(built):
    out, manifest, _ = built
    keys = {(e["bucket"], e["group"]) for e in manifest["eval"]}
    assert keys == {("web", "all"), ("multilingual", "de"), ("multilingual", "fr")}
    for e in manifest["eval"]:
        arr = np.load(out / e["path"])
        assert arr.shape == (e["num_sequences"], 64) and e["num_sequences"] >= 1
    shards = np.concatenate([np.load(out / s["path"]) for s in manifest["shards"]])
    ev = np.load(out / manifest["eval"][0]["path"])
    row = ev[0][ev[0] != manifest["special_tokens"]["pad"]]
    # a 32-token window of a held-out document never appears in a training shard row
    window = row[:32].tobytes()
    assert all(window not in r.tobytes() for r in shards)


def test_same_spec_and_seed_give_byte_identical_shards(built, tmp_path):
    out, manifest, spec = built
    again = build_mixture(spec, tmp_path / "again")
    assert [s["sha256"] for s in again["shards"]] == [s["sha256"] for s in manifest["shards"]]
    assert (tmp_path / "again/manifest.json").read_bytes() == (out / "manifest.json").read_bytes()


def test_different_seed_changes_order(lake, write_spec, built, tmp_path):
    _, manifest, _ = built
    other = build_mixture(write_spec(base_spec(lake, seed=8)), tmp_path / "o")
    assert [s["sha256"] for s in other["shards"]] != [s["sha256"] for s in manifest["shards"]]


def test_curriculum_stages_change_weights_part_way(lake, write_spec, tmp_path):
    stages = [
        {"name": "warm", "until": 0.5, "weights": {"web": 1.0, "multilingual": 0.0}},
        {"name": "rest", "until": 1.0, "weights": {"web": 0.2, "multilingual": 0.8}},
    ]
    m = build_mixture(write_spec(base_spec(lake, stages=stages)), tmp_path / "c")
    assert [s["name"] for s in m["stages"]] == ["warm", "rest"]
    assert m["buckets"]["web"]["weight"] == pytest.approx(0.6)
    assert all(c["ok"] for c in m["checks"])
    warm = m["stages"][0]
    assert warm["tokens"] == pytest.approx(10_000, rel=0.02)
    # the warm stage holds only English: decode its shards
    tok = Tokenizer.from_file(str(tmp_path / "c/tokenizer.json"))
    warm_text = "".join(
        tok.decode(np.load(tmp_path / "c" / s["path"]).reshape(-1).tolist())
        for s in m["shards"]
        if s["stage"] == "warm"
    )
    assert " der " not in warm_text and " the " in warm_text


def test_per_source_weights_are_met(lake, write_spec, tmp_path):
    docs = str(lake / "filter" / "documents.parquet")
    spec = base_spec(lake)
    spec["buckets"]["web"]["sources"] = [
        {"path": docs, "where": "lang = 'en' AND quality_score >= 0.5", "weight": 0.7},
        {"path": docs, "where": "lang = 'en' AND quality_score < 0.5", "weight": 0.3},
    ]
    m = build_mixture(write_spec(spec), tmp_path / "s")
    web = [s for s in m["sources"] if s["bucket"] == "web"]
    assert [s["tokens"] for s in web] == [s["target_tokens"] for s in web]
    assert web[0]["tokens"] / (web[0]["tokens"] + web[1]["tokens"]) == pytest.approx(0.7, abs=0.01)


def test_empty_optional_bucket_is_reported_as_shortfall(lake, write_spec, tmp_path):
    spec = base_spec(lake, allow_shortfall=True, image_tokens=4)
    spec["buckets"]["web"]["weight"] = 0.5
    spec["buckets"]["images"] = {
        "weight": 0.1,
        "modality": "image_caption",
        "sources": [{"path": "missing/*.parquet", "kind": "pairs", "optional": True}],
    }
    m = build_mixture(write_spec(spec), tmp_path / "e")
    (short,) = m["shortfalls"]
    assert (
        short["bucket"] == "images"
        and "no data" in short["reason"]
        and short["missing_tokens"] == 2000
    )
    assert m["buckets"]["images"]["modality"] == "image_caption"


def test_spec_can_train_its_own_tokenizer(lake, write_spec, tmp_path):
    spec = base_spec(
        lake, tokenizer={"train": {"vocab_size": 300, "sample_tokens": 5000}}, total_tokens=3000
    )
    m = build_mixture(write_spec(spec), tmp_path / "t")
    tok = Tokenizer.from_file(str(tmp_path / "t/tokenizer.json"))
    assert m["vocab_size"] == tok.get_vocab_size() <= 300
    tok_sha = hashlib.sha256((tmp_path / "t/tokenizer.json").read_bytes()).hexdigest()
    assert m["tokenizer_sha256"] == tok_sha  # what training checks checkpoints against
    assert m["special_tokens"] == {
        "boundary": 0,
        "pad": 1,
        "image": 2,
        "image_start": 3,
        "image_end": 4,
    }


def test_quality_repeat_rule_repeats_high_quality_documents(lake, write_spec, tmp_path):
    spec = base_spec(lake)
    spec["buckets"]["web"]["repeat"] = [{"where": "quality_score >= 0.5", "times": 3.0}]
    spec["buckets"]["web"]["sources"][0]["where"] = "lang = 'en'"
    m = build_mixture(write_spec(spec), tmp_path / "r")
    assert all(c["ok"] for c in m["checks"]) and m["buckets"]["web"]["tokens"] == 12_000


def test_tokenizer_keeps_combining_marks_with_their_letters(tmp_path):
    """The pre-tokenizer keeps a vowel sign, virama or vowel point in its word, so BPE can merge
    it with its letter (GPT-2's pattern isolates each one); text without marks splits exactly as
    GPT-2's ByteLevel splits it; every text decodes to itself."""
    from tokenizers import pre_tokenizers

    from training.tokenizer import train_tokenizer

    hindi = "भारत एक विशाल देश है। यहाँ अनेक भाषाएँ बोली जाती हैं।"
    tamil = "தமிழ் மொழி மிகவும் பழமையான மொழிகளில் ஒன்று."
    english = "It's the 2nd time we've met -- isn't it?  Numbers 12345 and emoji 🎉 stay.\n"
    texts = [hindi, tamil, english] * 40
    tok = Tokenizer.from_file(str(train_tokenizer(texts, 600, tmp_path / "tokenizer.json")))
    pieces = [p for p, _ in tok.pre_tokenizer.pre_tokenize_str(hindi)]
    assert len(pieces) == len(hindi.replace("।", " ।").split())  # a piece a word (and each danda)
    gpt2 = pre_tokenizers.ByteLevel(add_prefix_space=False)
    assert tok.pre_tokenizer.pre_tokenize_str(english) == gpt2.pre_tokenize_str(english)
    for text in (hindi, tamil, english):
        assert tok.decode(tok.encode(text).ids) == text
    # trained on them, a Hindi word is a few tokens, not a token per letter and per mark
    assert len(tok.encode("विशाल").ids) < len("विशाल")


def test_special_token_strings_in_text_never_encode_to_special_ids(tmp_path):
    """Trained on text full of "<|endoftext|>"/"<|pad|>", the tokenizer still encodes those
    strings as text: a raw Tokenizer given to encode_texts, and one from load_tokenizer."""
    from training.tokenizer import (
        SPECIAL_TOKENS,
        encode_texts,
        load_tokenizer,
        special_token_ids,
        train_tokenizer,
    )

    line = "hello " + " x ".join(SPECIAL_TOKENS.values()) + " world"
    path = train_tokenizer([line] * 200 + ["some plain text"] * 50, 400, tmp_path / "t.json")
    for tok in (Tokenizer.from_file(str(path)), load_tokenizer(path)):
        special = list(special_token_ids(tok).values())
        tokens, lengths = encode_texts(tok, [line, "a <|endoftext|>b"])
        assert not np.isin(tokens, special).any()
        assert tok.decode(tokens[: lengths[0]].tolist()) == line
