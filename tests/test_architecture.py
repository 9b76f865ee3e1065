"""The layering rule: domain packages never import Dagster or Beam; pipelines/ adapts them."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOMAIN_PACKAGES = ("common", "crawlers", "filters", "sampleweb", "synth", "training")
FORBIDDEN = ("dagster", "apache_beam")


def forbidden_imports(source: str, filename: str = "<string>") -> list[tuple[int, str]]:
    """Every import of a forbidden top-level module in source, anywhere (also inside functions)."""
    hits = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Call) and getattr(
            node.func, "attr", getattr(node.func, "id", "")
        ) in (
            "import_module",
            "__import__",
        ):
            names = [
                a.value
                for a in node.args[:1]
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
        for name in names:
            if name.split(".")[0] in FORBIDDEN:
                hits.append((node.lineno, name))
    return hits


def test_checker_catches_every_import_form():
    src = (
        "import dagster\n"
        "from apache_beam.io import ReadFromText\n"
        "def f():\n    import apache_beam as beam\n"
        "import importlib\nimportlib.import_module('dagster._core')\n"
        "import dagsterish\nfrom .dagster import x\n"
    )
    assert [name for _, name in forbidden_imports(src)] == [
        "dagster",
        "apache_beam.io",
        "apache_beam",
        "dagster._core",
    ]


def test_domain_packages_never_import_dagster_or_beam():
    offenders = []
    files = [p for pkg in DOMAIN_PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    assert files, "no domain modules found"
    for path in files:
        for lineno, name in forbidden_imports(path.read_text(encoding="utf-8"), str(path)):
            offenders.append(f"{path.relative_to(ROOT)}:{lineno} imports {name}")
    assert not offenders, "domain code must not import Dagster or Beam:\n" + "\n".join(offenders)
