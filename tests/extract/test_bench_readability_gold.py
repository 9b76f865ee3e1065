"""bench/extract.py reads readability's expected.html as UTF-8: the fragment declares no charset,
and read as Latin-1 its CJK (and every non-ASCII) gold text is mojibake no system can match."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "extract.py"
ZH = "图为马素湘在澳大利亚悉尼游玩时拍摄的照片。"
DE = "Größere Summen fließen in den Nahverkehr."


def _bench():
    spec = importlib.util.spec_from_file_location("bench_extract_for_test", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _case(root: Path, name: str, expected: bytes) -> None:
    (root / name).mkdir()
    (root / name / "source.html").write_bytes(b"<html><body><p>x</p></body></html>")
    (root / name / "expected.html").write_bytes(expected)


def test_expected_html_without_charset_is_read_as_utf8(tmp_path):
    _case(tmp_path, "youth", f'<div id="readability-page-1"><p>{ZH}</p></div>'.encode())
    _case(tmp_path, "de", f"<div><p>{DE}</p></div>\n".encode())
    pages = _bench().load_readability_pages(tmp_path)
    assert [(url, gold.strip()) for url, _, gold in pages] == [
        ("http://fakehost/test/de/", DE),
        ("http://fakehost/test/youth/", ZH),
    ]


def test_expected_html_not_utf8_names_the_file(tmp_path):
    _case(tmp_path, "latin", "<p>Größe</p>".encode("latin-1"))
    with pytest.raises(SystemExit, match=r"latin/expected\.html: not UTF-8 .*; fix: "):
        _bench().load_readability_pages(tmp_path)
