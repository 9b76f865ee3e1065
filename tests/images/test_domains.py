"""Knowledge-domain selection: the shipped spec, keyword matching (word boundaries, prefixes,
scripts without spaces), CLIP similarity against a margin with a fake scorer, evidence rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from filters.config import ConfigError
from filters.images.config import DomainSelectConfig
from filters.images.domains import (
    DOMAIN_IMAGES,
    REASONS,
    KeywordMatcher,
    domain_spec_from_dict,
    domain_table,
    load_domain_spec,
    select_domains,
)
from sampleweb.images import Group, Scene, render_png

SHIPPED = Path(__file__).resolve().parents[2] / "filters" / "images" / "domains.yaml"


def test_shipped_spec_has_keywords_in_six_languages_and_prompts():
    spec = load_domain_spec(SHIPPED)
    assert {"charts", "maps", "food", "animals"} <= set(spec.domains)
    for name, d in spec.domains.items():
        assert {"en", "de", "fr", "es", "ja", "zh"} <= set(d.keywords), name
        assert d.prompts, name


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A bar chart of monthly sales", {"charts": ["chart*", "bar chart*"]}),
        ("Two charts side by side", {"charts": ["chart*"]}),
        ("Old map of Lisbon", {"maps": ["map"]}),
        ("MAP OF THE WORLD", {"maps": ["map"]}),
        ("Bitmap font mapping table", {}),  # no word boundary: no hit
        ("category concatenate scatter", {}),
        ("plate of three red apples", {"food": ["plate of", "apple*"]}),
        ("x-ray of two blue circles", {"medical_imaging": ["x-ray*"]}),
        ("Röntgenbild der Lunge", {"medical_imaging": ["Röntgen*", "Röntgenbild*"]}),
        ("Stadtplan von Berlin", {"maps": ["Stadtplan*"]}),
        ("Carte de la France", {"maps": ["carte"]}),
        ("Gráfico de barras de ventas", {"charts": ["gráfico*"]}),
        ("Un gato durmiendo", {"animals": ["gato*"]}),
        ("東京の地図", {"maps": ["地図"]}),
        ("一只猫在沙发上睡觉", {"animals": ["猫"]}),
        ("年度销售柱状图", {"charts": ["柱状图"]}),
        ("円グラフで見る人口", {"charts": ["グラフ", "円グラフ"]}),
        ("A dog next to a street map", {"maps": ["map", "street map*"], "animals": ["dog"]}),
        ("", {}),
        (None, {}),
    ],
)
def test_keyword_hits(text, expected):
    assert KeywordMatcher(load_domain_spec(SHIPPED)).hits(text) == expected


def test_multiword_keywords_allow_any_whitespace():
    spec = domain_spec_from_dict(
        {"domains": {"x": {"keywords": {"en": ["pie chart"]}, "prompts": ["p"]}}}
    )
    assert KeywordMatcher(spec).hits("a pie   chart") == {"x": ["pie chart"]}
    assert KeywordMatcher(spec).hits("a pie charts") == {}


def test_spec_errors_name_the_file_and_field(tmp_path):
    bad = tmp_path / "d.yaml"
    bad.write_text("domains:\n  maps:\n    keywords: {en: []}\n    prompts: [a map]\n")
    with pytest.raises(ConfigError, match=r"d.yaml.*domains\.maps\.keywords.*keywords\.en"):
        load_domain_spec(bad)
    bad.write_text("domains:\n  maps:\n    keywords: {en: [map]}\n    prompt: [a map]\n")
    with pytest.raises(ConfigError, match=r"domains\.maps\.prompt"):
        load_domain_spec(bad)
    with pytest.raises(ConfigError, match="not found"):
        load_domain_spec(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="domains"):
        domain_spec_from_dict(["maps"], "list.yaml")


SPEC = {
    "margin": 0.05,
    "min_similarity": 0.2,
    "domains": {
        "maps": {"keywords": {"en": ["map"], "ja": ["地図"]}, "prompts": ["a map", "a city plan"]},
        "charts": {"keywords": {"en": ["chart*"]}, "prompts": ["a bar chart"]},
        "food": {"keywords": {"en": ["plate of"]}, "prompts": ["food", "a plate"]},
    },
}


class TableScorer:
    """Fake CLIP: similarities looked up per (image file name, prompt); records its calls."""

    def __init__(self, table: dict[str, dict[str, float]]):
        self.table = table
        self.calls: list[tuple[list[str], list[str]]] = []

    def __call__(self, paths, prompts):
        self.calls.append((list(paths), list(prompts)))
        return np.array([[self.table[Path(p).name].get(q, 0.0) for q in prompts] for p in paths])


def _row(pid, caption, image="x.png", reason=None):
    return {"id": pid, "caption": caption, "image_path": image, "drop_reason": reason}


def test_selection_with_margin_floor_and_evidence():
    scorer = TableScorer(
        {
            "clear.png": {"a map": 0.31, "a city plan": 0.35, "a bar chart": 0.22, "food": 0.1},
            "close.png": {"a map": 0.30, "a bar chart": 0.28},
            "weak.png": {"a map": 0.15},
            "chart.png": {"a map": 0.21, "a bar chart": 0.33},
        }
    )
    rows = [
        _row("p1", "A map of Kyoto", "images/clear.png"),
        _row("p2", "Map and bar charts", "images/close.png"),
        _row("p3", "tiny map", "images/weak.png"),
        _row("p4", "Sales chart", "images/chart.png"),
        _row("p5", "京都の地図", None),
        _row("p6", "A map, dropped earlier", "images/clear.png", reason="duplicate"),
        _row("p7", "A sunset over the sea", "images/clear.png"),
    ]
    out = select_domains(rows, domain_spec_from_dict(SPEC), scorer, image_root="/data/out")
    by = {(r["id"], r["domain"]): r for r in out}
    assert set(by) == {
        ("p1", "maps"),
        ("p2", "maps"),
        ("p2", "charts"),
        ("p3", "maps"),
        ("p4", "charts"),
        ("p5", "maps"),
    }
    p1 = by[("p1", "maps")]
    assert p1["selected"] and p1["clip_similarity"] == pytest.approx(0.35)  # best prompt
    assert p1["keyword_hits"] == ["map"]
    assert p1["reason"].startswith("selected: 0.350") and "charts 0.220" in p1["reason"]
    # 0.30 vs charts 0.28: within the 0.05 margin, both ways.
    assert not by[("p2", "maps")]["selected"]
    assert by[("p2", "maps")]["reason"].startswith("within_margin")
    assert not by[("p2", "charts")]["selected"]
    assert by[("p3", "maps")]["reason"] == "low_similarity: 0.150 < 0.200"
    assert by[("p4", "charts")]["selected"]
    assert by[("p5", "maps")] == {
        "id": "p5",
        "domain": "maps",
        "keyword_hits": ["地図"],
        "clip_similarity": None,
        "selected": False,
        "reason": "no_image: the pair has no stored image",
    }
    assert all(r["reason"].split(":")[0] in REASONS for r in out)
    # Each image is scored once, against every prompt of every domain, under image_root.
    scored = [p for paths, _ in scorer.calls for p in paths]
    assert sorted(scored) == sorted(set(scored))
    assert all(p.startswith("/data/out/images/") for p in scored)
    assert scorer.calls[0][1] == ["a map", "a city plan", "a bar chart", "food", "a plate"]
    table = domain_table(out)
    assert table.schema == DOMAIN_IMAGES and table.num_rows == len(out)


def test_per_domain_thresholds_override_spec_and_config():
    spec = dict(SPEC)
    spec["domains"] = {**SPEC["domains"], "maps": {**SPEC["domains"]["maps"], "margin": 0.0}}
    scorer = TableScorer({"close.png": {"a map": 0.30, "a bar chart": 0.28}})
    out = select_domains([_row("p", "a map", "close.png")], domain_spec_from_dict(spec), scorer)
    assert out[0]["selected"]
    # Neither spec nor domain sets min_similarity: the config's applies.
    loose = {k: v for k, v in SPEC.items() if k != "min_similarity"}
    weak = TableScorer({"weak.png": {"a map": 0.15}})
    rows = [_row("p", "a map", "weak.png")]
    assert not select_domains(rows, domain_spec_from_dict(loose), weak)[0]["selected"]
    cfg = DomainSelectConfig(min_similarity=0.1)
    assert select_domains(rows, domain_spec_from_dict(loose), weak, cfg=cfg)[0]["selected"]


def test_without_scorer_keywords_alone_select():
    rows = [_row("p", "A chart and a map"), _row("q", "plate of apples", None)]
    out = select_domains(rows, domain_spec_from_dict(SPEC), None)
    assert [(r["id"], r["domain"], r["selected"], r["reason"].split(":")[0]) for r in out] == [
        ("p", "maps", True, "keyword_only"),
        ("p", "charts", True, "keyword_only"),
        ("q", "food", False, "no_image"),
    ]
    assert all(r["clip_similarity"] is None for r in out)


def test_alt_used_when_caption_is_missing_and_batches_respected():
    rows = [{"id": f"p{i}", "alt": "a map", "image_path": f"{i}.png"} for i in range(5)]
    scorer = TableScorer({f"{i}.png": {"a map": 0.5} for i in range(5)})
    out = select_domains(
        rows, domain_spec_from_dict(SPEC), scorer, cfg=DomainSelectConfig(batch_size=2)
    )
    assert [len(paths) for paths, _ in scorer.calls] == [2, 2, 1]
    assert all(r["selected"] for r in out) and len(out) == 5


def test_scorer_with_wrong_shape_is_named():
    def bad(paths, prompts):
        return np.zeros((len(paths), 1))

    with pytest.raises(ValueError, match="one row per image, one column per prompt"):
        select_domains([_row("p", "a map")], domain_spec_from_dict(SPEC), bad)


def test_real_images_with_a_colour_scorer(tmp_path):
    """A scorer that reads the stored files: the share of an image's non-background pixels that
    are red (for prompts mentioning red) or blue; scenes on disk, paths relative to the root."""
    (tmp_path / "images").mkdir()
    scenes = {
        "red.png": Scene((Group(3, "red", "square", "center"),), 200, 150),
        "blue.png": Scene((Group(3, "blue", "circle", "center"),), 200, 150),
    }
    for name, scene in scenes.items():
        (tmp_path / "images" / name).write_bytes(render_png(scene))

    def colour_share(paths, prompts):
        out = []
        for p in paths:
            px = np.asarray(Image.open(p).convert("RGB")).reshape(-1, 3).astype(int)
            fg = px[(px.sum(1) < 600)]
            red = float(((fg[:, 0] > 150) & (fg[:, 2] < 100)).mean()) if len(fg) else 0.0
            blue = float(((fg[:, 2] > 150) & (fg[:, 0] < 100)).mean()) if len(fg) else 0.0
            out.append([red if "red" in q else blue for q in prompts])
        return np.array(out)

    spec = domain_spec_from_dict(
        {
            "margin": 0.1,
            "min_similarity": 0.3,
            "domains": {
                "warm": {"keywords": {"en": ["shape*"]}, "prompts": ["something red"]},
                "cool": {"keywords": {"en": ["shape*"]}, "prompts": ["something blue"]},
            },
        }
    )
    rows = [
        _row("r", "three shapes", "images/red.png"),
        _row("b", "three shapes", "images/blue.png"),
    ]
    out = select_domains(rows, spec, colour_share, image_root=tmp_path)
    chosen = {(r["id"], r["domain"]) for r in out if r["selected"]}
    assert chosen == {("r", "warm"), ("b", "cool")}
