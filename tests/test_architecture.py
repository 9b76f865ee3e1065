"""The layering rules: domain packages never import Dagster or Beam (pipelines/ adapts them), and
they stand in floors: a package imports only packages on lower floors, never sideways or up."""

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


# The floors of the domain packages, ground first. common/ holds what several domains share (the
# lake, consent, the LLM client, the browser launch, pairs, schemas, checks' result type) and the
# fixture web stands beside it; crawlers, filters and training each build on those alone; synth
# uses training's models. pipelines/ (the adapters) and bench/ stand above every domain.
FLOORS = {
    "common": 0,
    "sampleweb": 0,
    "crawlers": 1,
    "filters": 1,
    "training": 1,
    "synth": 2,
}


def _domain_imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level package) of every absolute import of a project package in a file."""
    hits = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        hits += [(node.lineno, n.split(".")[0]) for n in names]
    return [(line, top) for line, top in hits if top in FLOORS or top in ("pipelines", "bench")]


def floor_violations(root: Path = ROOT) -> list[str]:
    out = []
    for pkg, floor in FLOORS.items():
        for path in sorted((root / pkg).rglob("*.py")):
            for line, top in _domain_imports(path):
                if top == pkg:
                    continue
                if top in ("pipelines", "bench") or FLOORS[top] >= floor:
                    out.append(
                        f"{path.relative_to(root)}:{line} imports {top} (floor "
                        f"{FLOORS.get(top, 'adapter')}) from {pkg} (floor {floor})"
                    )
    return out


def test_domain_packages_import_only_lower_floors():
    offenders = floor_violations()
    assert not offenders, "a domain package imports sideways or up:\n" + "\n".join(offenders)


def test_the_floor_rule_catches_a_sideways_import(tmp_path):
    for pkg in FLOORS:
        (tmp_path / pkg).mkdir()
    (tmp_path / "filters" / "x.py").write_text("from crawlers.extract import page\n")
    (tmp_path / "training" / "y.py").write_text("import common.lake\nimport synth.captions\n")
    (tmp_path / "common" / "z.py").write_text("def f():\n    from pipelines import cli\n")
    assert floor_violations(tmp_path) == [
        "common/z.py:2 imports pipelines (floor adapter) from common (floor 0)",
        "filters/x.py:1 imports crawlers (floor 1) from filters (floor 1)",
        "training/y.py:2 imports synth (floor 2) from training (floor 1)",
    ]


# Each stage is a vertical slice: its driver lives in its domain package and returns a typed
# result (a dataclass or TypedDict the reader can look up), never a bare dict; the stage module in
# pipelines/stages/ keeps the parameters, the summary and the Stage(...), and at most a function
# that picks where the driver runs (an executor) and calls it.
DRIVERS = {
    "filters/run.py": ("run_filter",),
    "crawlers/extract/run.py": ("run_extract",),
    "crawlers/crawl/run.py": ("run_crawl",),
    "training/mixture/run.py": (
        "run_tokenizer_train",
        "run_mix_validate",
        "run_mix_build",
        "run_mix_report",
    ),
}
STAGE_RUN_FUNCTIONS = {
    "extract.py": {"run_extract"},  # the Beam executor around crawlers.extract.run.run_extract
    "filter.py": {"run_filter"},  # the executor the runner names, around filters.run.run_filter
    "sampleweb.py": {"run_sampleweb_write"},  # still the sample web's writer: sampleweb/ to own it
}
UNTYPED = ("dict", "Dict", "Mapping", "Any")


def _functions(path: Path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def test_stage_drivers_live_in_their_domain_and_return_typed_results():
    problems = []
    for rel, names in DRIVERS.items():
        defs = _functions(ROOT / rel) if (ROOT / rel).exists() else {}
        for name in names:
            fn = defs.get(name)
            if fn is None:
                problems.append(f"{rel}: no {name}")
                continue
            ret = ast.unparse(fn.returns) if fn.returns is not None else ""
            if not ret or ret.split("[")[0] in UNTYPED:
                problems.append(
                    f"{rel}::{name} returns {ret or 'no annotation'}, not a typed result"
                )
    assert not problems, "\n".join(problems)


def test_stage_modules_define_no_drivers():
    extra = []
    for path in sorted((ROOT / "pipelines" / "stages").glob("*.py")):
        allowed = STAGE_RUN_FUNCTIONS.get(path.name, set())
        extra += [
            f"pipelines/stages/{path.name}::{name}"
            for name in _functions(path)
            if name.startswith("run_") and name not in allowed
        ]
    assert not extra, "drivers belong in the domain package (e.g. training/mixture/run.py):\n" + (
        "\n".join(extra)
    )


def test_the_crawl_driver_lives_in_crawlers_crawl_run():
    """`refinery crawl`'s driver and its manifests are the crawl package's (issue #25): the
    stage module only imports run_crawl, and it returns a typed result."""
    driver = _functions(ROOT / "crawlers" / "crawl" / "run.py").get("run_crawl")
    assert driver is not None and ast.unparse(driver.returns) == "CrawlResult"
    assert "run_crawl" not in _functions(ROOT / "pipelines" / "stages" / "crawl.py")
