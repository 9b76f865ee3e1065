"""The sample web's place: a top-level package whose modules import each other one way only,"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sampleweb"


def sibling_imports(path: Path) -> list[tuple[str, bool]]:
    """(sibling module, imported inside a function) for every relative import in a module.

    `from . import x` names module x when sampleweb/x.py exists, else the package itself."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    in_function: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            in_function |= {id(n) for n in ast.walk(node) if n is not node}
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.level == 1):
            continue
        if node.module:
            targets = [node.module.split(".")[0]]
        else:
            targets = [
                a.name if (PACKAGE / f"{a.name}.py").exists() else "__init__" for a in node.names
            ]
        out += [(t, id(node) in in_function) for t in targets]
    return out


def import_graph() -> dict[str, set[str]]:
    return {p.stem: {t for t, _ in sibling_imports(p) if t != p.stem} for p in PACKAGE.glob("*.py")}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle, found by depth-first search (each reported once from its first node)."""
    found, seen = [], set()

    def visit(node: str, stack: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in stack:
                cycle = stack[stack.index(nxt) :] + [nxt]
                if frozenset(cycle) not in seen:
                    seen.add(frozenset(cycle))
                    found.append(cycle)
            else:
                visit(nxt, stack + [nxt])

    for start in sorted(graph):
        visit(start, [start])
    return found


def test_cycle_finder_sees_a_two_module_circle():
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b", "a"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_sampleweb_modules_import_each_other_one_way_only():
    graph = import_graph()
    assert {"build", "builder", "server", "export"} <= set(graph)
    assert not cycles(graph), f"import cycles in sampleweb/: {cycles(graph)}"


def test_no_sibling_import_hides_inside_a_function():
    hidden = [
        f"sampleweb/{p.name} imports .{target} inside a function"
        for p in PACKAGE.glob("*.py")
        for target, inside in sibling_imports(p)
        if inside
    ]
    assert not hidden, "\n".join(hidden)


def _run(*args: str, cwd: Path) -> str:
    out = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True)
    assert out.returncode == 0, f"python {' '.join(args)} failed:\n{out.stderr}"
    return out.stdout


def test_package_imports_outside_the_checkout(tmp_path: Path):
    code = "import sampleweb; print(sampleweb.__file__)"
    assert Path(_run("-c", code, cwd=tmp_path).strip()).parent == PACKAGE
    assert "usage: python -m sampleweb" in _run("-m", "sampleweb", "--help", cwd=tmp_path)
