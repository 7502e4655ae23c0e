"""The package's structure, read from its source with ``ast`` (nothing is imported):

- no import circle among its modules, counting imports inside functions and under
  ``TYPE_CHECKING`` (a circle is a circle whether Python runs into it at import time or later);
- layers depend only downward, as docs/development.md ("Layers") states: formats -> metrics
  (with llm and judge beside it) -> scoring -> outputs (with organizers, which uses scoring and is
  used by the entry points) -> entry points (commands, codabench); ``subtracks``, ``problems``
  and the package's other top-level modules are read by every layer and import none;
- inside ``codabench``, by who runs it: the scoring program on the worker (``program``) below
  the organizers' builder (``bundle``) below their offline checker (``check``);
- a module over 450 lines says at the top of its docstring why it is one module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import reteco

PACKAGE_DIR = Path(reteco.__file__).parent

# docs/development.md, "Layers": a module may import its own layer and the layers below it.
LAYERS = {
    "formats": 0,
    "metrics": 1, "llm": 1, "judge": 1,
    "scoring": 2,
    "outputs": 3, "organizers": 3,
    "commands": 4, "codabench": 4, "__main__": 4,
}
SHARED = -1  # subtracks.py, problems.py, arrow_memory.py, __init__.py: read by every layer
# docs/development.md, "Layers": codabench's packages by who runs them. The worker loads only
# ``program``; the builder may read the formats the program reads, the checker both.
CODABENCH = {"program": 0, "bundle": 1, "check": 2}
MAX_LINES_WITHOUT_REASON = 450
REASON = "Why one module"


def modules(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of the package (``__init__`` as its package)."""
    root = package_dir.parent
    found = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def import_graph(package_dir: Path) -> dict[str, dict[str, int]]:
    """Module -> {module of the package it imports: the line of its first such import}.

    ``from a.b import c`` imports the module ``a.b.c`` when there is one, else the names of
    ``a.b``; relative imports are resolved; imports anywhere in the file count.
    """
    names = modules(package_dir)
    top = package_dir.name

    def owner(dotted: str) -> str | None:
        while dotted and dotted not in names:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    graph: dict[str, dict[str, int]] = {}
    for module, path in names.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges = graph.setdefault(module, {})
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [owner(alias.name) for alias in node.names if alias.name.split(".")[0] == top]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                if base.split(".")[0] != top:
                    continue
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in names else owner(base) for a in node.names]
            else:
                continue
            for target in targets:
                if target is not None and target != module:
                    edges.setdefault(target, node.lineno)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The import circles: strongly connected components of two or more modules (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS[parts[1]] if len(parts) > 1 and parts[1] in LAYERS else SHARED


def upward_imports(graph: dict[str, dict[str, int]]) -> list[str]:
    """Every import of a module by a module of a lower layer, as ``importer:line -> imported``."""
    return [
        f"{a}:{line} -> {b}"
        for a, imported in sorted(graph.items())
        for b, line in sorted(imported.items())
        if layer(b) > layer(a)
    ]


def codabench_part(module: str) -> int | None:
    parts = module.split(".")
    return CODABENCH.get(parts[2]) if len(parts) > 2 and parts[1] == "codabench" else None


def upward_imports_in_codabench(graph: dict[str, dict[str, int]]) -> list[str]:
    """Every import of a later codabench package by an earlier one (``CODABENCH``)."""
    return [
        f"{a}:{line} -> {b}"
        for a, imported in sorted(graph.items())
        for b, line in sorted(imported.items())
        if codabench_part(a) is not None and codabench_part(b) is not None and codabench_part(b) > codabench_part(a)
    ]


def circle_text(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    edges = [f"{a}:{line} -> {b}" for a in component for b, line in sorted(graph[a].items()) if b in component]
    return "; ".join(edges)


def test_the_package_has_no_import_circle():
    graph = import_graph(PACKAGE_DIR)
    assert len(graph) > 100  # the whole package was read
    found = cycles(graph)
    assert not found, "\n".join(circle_text(graph, c) for c in found)


def test_layers_import_only_downward():
    assert upward_imports(import_graph(PACKAGE_DIR)) == []


def test_every_layer_of_the_rule_is_a_folder_of_the_package():
    folders = {p.name for p in PACKAGE_DIR.iterdir() if (p / "__init__.py").is_file()} | {"__main__"}
    assert set(LAYERS) == folders


def test_the_scoring_program_imports_neither_the_builder_nor_the_checker():
    assert upward_imports_in_codabench(import_graph(PACKAGE_DIR)) == []


def test_every_codabench_package_of_the_rule_is_a_folder():
    folders = {p.name for p in (PACKAGE_DIR / "codabench").iterdir() if (p / "__init__.py").is_file()}
    assert set(CODABENCH) == folders
    loose = sorted(p.name for p in (PACKAGE_DIR / "codabench").glob("*.py") if p.name != "__init__.py")
    assert not loose, f"codabench/ modules outside its packages (who runs them?): {loose}"


def test_a_long_module_says_why_it_is_one_module():
    lacking = []
    for module, path in modules(PACKAGE_DIR).items():
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MAX_LINES_WITHOUT_REASON and REASON not in (ast.get_docstring(ast.parse(text)) or ""):
            lacking.append(f"{module} ({lines} lines)")
    assert not lacking, f"over {MAX_LINES_WITHOUT_REASON} lines without {REASON!r} in the docstring: {lacking}"


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "reteco"


def test_the_checks_find_a_circle_through_a_function_and_an_upward_import(tmp_path):
    package = _write(tmp_path, {
        "reteco/__init__.py": "",
        "reteco/problems.py": "",
        "reteco/formats/__init__.py": "",
        "reteco/formats/runs.py": "from reteco.problems import x\n\n\ndef f():\n    from reteco.scoring import rules\n",
        "reteco/scoring/__init__.py": "",
        "reteco/scoring/rules.py": "from ..formats import runs\nimport reteco.outputs.pages\n",
        "reteco/outputs/__init__.py": "",
        "reteco/outputs/pages.py": "import json\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from reteco import problems\n",
    })
    graph = import_graph(package)
    assert graph["reteco.formats.runs"] == {"reteco.problems": 1, "reteco.scoring.rules": 5}
    assert graph["reteco.scoring.rules"] == {"reteco.formats.runs": 1, "reteco.outputs.pages": 2}
    assert graph["reteco.outputs.pages"] == {"reteco.problems": 4}
    assert cycles(graph) == [["reteco.formats.runs", "reteco.scoring.rules"]]
    assert upward_imports(graph) == ["reteco.formats.runs:5 -> reteco.scoring.rules", "reteco.scoring.rules:2 -> reteco.outputs.pages"]


def test_the_check_finds_the_program_importing_the_builder(tmp_path):
    package = _write(tmp_path, {
        "reteco/__init__.py": "",
        "reteco/codabench/__init__.py": "",
        "reteco/codabench/program/__init__.py": "",
        "reteco/codabench/program/scoring_program.py": "def f():\n    from reteco.codabench.bundle import builder\n",
        "reteco/codabench/bundle/__init__.py": "",
        "reteco/codabench/bundle/builder.py": "from reteco.codabench.program import scoring_program\n",
        "reteco/codabench/check/__init__.py": "",
        "reteco/codabench/check/rules.py": "from reteco.codabench.bundle import builder\n",
    })
    graph = import_graph(package)
    assert upward_imports_in_codabench(graph) == [
        "reteco.codabench.program.scoring_program:2 -> reteco.codabench.bundle.builder"]
    assert upward_imports(graph) == []  # one layer (entry points) for the package rule


def test_the_shared_modules_may_import_no_layer(tmp_path):
    package = _write(tmp_path, {
        "reteco/__init__.py": "",
        "reteco/subtracks.py": "from reteco.formats.runs import y\n",
        "reteco/formats/__init__.py": "",
        "reteco/formats/runs.py": "from reteco import subtracks\n",
    })
    graph = import_graph(package)
    assert upward_imports(graph) == ["reteco.subtracks:1 -> reteco.formats.runs"]
    assert cycles(graph) == [["reteco.formats.runs", "reteco.subtracks"]]
