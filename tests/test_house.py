"""The package's structure, read from its source with ``ast`` (nothing is imported):

- no import circle among its modules, counting imports inside functions and under
  ``TYPE_CHECKING`` (a circle is a circle whether Python runs into it at import time or later);
- layers depend only downward, as docs/development.md ("Layers") states: formats -> metrics
  (with llm and judge beside it) -> scoring -> outputs (with release) -> entry points (commands,
  codabench, api) -> the organizers' workbench; ``subtracks``, ``problems`` and the package's
  other top-level modules are read by every layer and import none; the one exception is the
  package's own ``__init__``, whose PEP 562 ``__getattr__`` loads the public API (``reteco.api``,
  an entry point) on first use: that import is not counted;
- the scorer never imports the workbench (the workbench is the top layer), and inside the
  workbench each slice imports only the slices before it (``reteco.workbench.SLICES``); inside
  its ``codabench`` slice the builder (``bundle``) never imports the checker (``check``);
- the judge's runtime (``reteco.judge.runner``, ``reteco.scoring.judge_run``) reaches no audit
  module (golden sets, meta-evaluation, reports);
- a module over 450 lines says at the top of its docstring why it is one module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import reteco
import reteco.workbench

PACKAGE_DIR = Path(reteco.__file__).parent

# docs/development.md, "Layers": a module may import its own layer and the layers below it.
LAYERS = {
    "formats": 0,
    "metrics": 1, "llm": 1, "judge": 1,
    "scoring": 2,
    "outputs": 3, "release": 3,
    "commands": 4, "codabench": 4, "__main__": 4, "api": 4,
    "workbench": 5,
}
SHARED = -1  # subtracks.py, problems.py, arrow_memory.py, __init__.py: read by every layer
WORKBENCH = LAYERS["workbench"]
# docs/development.md, "Layers": the workbench's slices in order (reteco.workbench.SLICES), each
# importing the scorer and the slices before it; inside its codabench slice, the builder below
# the offline checker.
SLICES = {name: order for order, name in enumerate(reteco.workbench.SLICES)}
CODABENCH = {"bundle": 0, "check": 1}
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
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        lazy = _lazy_public_imports(tree) if module == top else set()
        for node in ast.walk(tree):
            if id(node) in lazy:
                continue
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


def _lazy_public_imports(tree: ast.Module) -> set[int]:
    """The import statements inside the package ``__init__``'s module-level ``__getattr__``: the
    public API loaded on first use (PEP 562), never at import time, so no circle and no layer
    is crossed when any module reads ``reteco.__version__``."""
    return {
        id(node)
        for function in tree.body
        if isinstance(function, ast.FunctionDef) and function.name == "__getattr__"
        for node in ast.walk(function)
        if isinstance(node, (ast.Import, ast.ImportFrom))
    }


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


def workbench_slice(module: str) -> int | None:
    """The order of the workbench slice ``module`` is in (``SLICES``), None outside the workbench."""
    parts = module.split(".")
    return SLICES.get(parts[2]) if len(parts) > 2 and parts[1] == "workbench" else None


def codabench_part(module: str) -> int | None:
    parts = module.split(".")
    return CODABENCH.get(parts[3]) if len(parts) > 3 and parts[1:3] == ["workbench", "codabench"] else None


def later_imports(graph: dict[str, dict[str, int]], part) -> list[str]:
    """Every import of a later part by an earlier one, ``part`` giving each module's order (None:
    not ordered by that rule)."""
    return [
        f"{a}:{line} -> {b}"
        for a, imported in sorted(graph.items())
        for b, line in sorted(imported.items())
        if part(a) is not None and part(b) is not None and part(b) > part(a)
    ]


def upward_imports_in_codabench(graph: dict[str, dict[str, int]]) -> list[str]:
    """Every import of the checker by the builder (``CODABENCH``)."""
    return later_imports(graph, codabench_part)


def upward_imports_in_workbench(graph: dict[str, dict[str, int]]) -> list[str]:
    """Every import of a later workbench slice by an earlier one (``SLICES``)."""
    return later_imports(graph, workbench_slice)


def closure(graph: dict[str, dict[str, int]], start: str) -> set[str]:
    """Every module ``start`` reaches through the import graph, counting imports inside functions."""
    seen, todo = set(), [start]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph.get(module, {}))
    return seen


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


def test_the_scorer_never_imports_the_workbench():
    # The workbench is the top layer, so test_layers_import_only_downward covers this too; said
    # here in its own words, with the modules named.
    graph = import_graph(PACKAGE_DIR)
    into = [f"{a}:{line} -> {b}" for a, imported in sorted(graph.items()) if layer(a) < WORKBENCH
            for b, line in sorted(imported.items()) if layer(b) == WORKBENCH]
    assert into == []
    assert any(layer(m) == WORKBENCH for m in graph) and any(layer(m) < WORKBENCH for m in graph)


def test_a_workbench_slice_imports_only_the_slices_before_it():
    assert upward_imports_in_workbench(import_graph(PACKAGE_DIR)) == []


def test_every_workbench_slice_of_the_rule_is_a_folder():
    folders = {p.name for p in (PACKAGE_DIR / "workbench").iterdir() if (p / "__init__.py").is_file()}
    assert set(SLICES) == folders
    loose = sorted(p.name for p in (PACKAGE_DIR / "workbench").glob("*.py") if p.name != "__init__.py")
    assert not loose, f"workbench/ modules outside its slices (which workflow are they?): {loose}"


def test_the_builder_never_imports_the_checker():
    assert upward_imports_in_codabench(import_graph(PACKAGE_DIR)) == []


def test_every_codabench_package_of_the_rule_is_a_folder():
    folders = {p.name for p in (PACKAGE_DIR / "workbench" / "codabench").iterdir() if (p / "__init__.py").is_file()}
    assert set(CODABENCH) == folders
    scorer = {p.name for p in (PACKAGE_DIR / "codabench").iterdir() if (p / "__init__.py").is_file()}
    assert scorer == {"program"}, "the scorer's codabench/ holds what runs on the worker alone"


# The judge's audit: golden sets, their meta-evaluation and simulated judges, the reports. The
# runtime that judges a submission (on the worker too) loads none of it (issue 36).
AUDIT_MODULE_NAMES = ("golden", "golden_templates", "golden_v5_templates", "golden_v5_topics", "meta_evaluation", "meta_contrasts", "simulated_judges",
                      "report", "stability_report", "estimate")
JUDGE_RUNTIME = ("reteco.judge.runner", "reteco.scoring.judge_run", "reteco.codabench.program.scoring_program")


def test_the_judge_runtime_reaches_no_audit_module():
    graph = import_graph(PACKAGE_DIR)
    for start in JUDGE_RUNTIME:
        assert start in graph
        reached = sorted(m for m in closure(graph, start)
                         if m.rpartition(".")[2] in AUDIT_MODULE_NAMES or layer(m) == WORKBENCH)
        assert reached == [], f"{start} reaches {reached}"


def test_a_long_module_says_why_it_is_one_module():
    lacking = []
    for module, path in modules(PACKAGE_DIR).items():
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MAX_LINES_WITHOUT_REASON and REASON not in (ast.get_docstring(ast.parse(text)) or ""):
            lacking.append(f"{module} ({lines} lines)")
    assert not lacking, f"over {MAX_LINES_WITHOUT_REASON} lines without {REASON!r} in the docstring: {lacking}"


def test_the_reason_states_no_line_count_that_could_go_stale():
    # "Why one module of 465 lines" was wrong in 5 of 16 modules (issue 23): the check above
    # counts the lines; the note says why, and a count in it is out of date at the next edit.
    import re

    counted = [m for m, p in modules(PACKAGE_DIR).items()
               if re.search(rf"{REASON} of [0-9,]+ lines", p.read_text(encoding="utf-8"))]
    assert counted == []


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


def test_the_checks_find_the_program_importing_the_builder_and_a_slice_importing_a_later_one(tmp_path):
    package = _write(tmp_path, {
        "reteco/__init__.py": "",
        "reteco/codabench/__init__.py": "",
        "reteco/codabench/program/__init__.py": "",
        "reteco/codabench/program/scoring_program.py": "def f():\n    from reteco.workbench.codabench.bundle import builder\n",
        "reteco/workbench/__init__.py": "",
        "reteco/workbench/codabench/__init__.py": "",
        "reteco/workbench/codabench/bundle/__init__.py": "",
        "reteco/workbench/codabench/bundle/builder.py": (
            "from reteco.codabench.program import scoring_program\nfrom reteco.workbench.codabench.check import rules\n"),
        "reteco/workbench/codabench/check/__init__.py": "",
        "reteco/workbench/codabench/check/rules.py": "from reteco.workbench.codabench.bundle import builder\n",
        "reteco/workbench/labels/__init__.py": "",
        "reteco/workbench/labels/pool.py": "from reteco.workbench.leaderboard import standings\n",
        "reteco/workbench/leaderboard/__init__.py": "",
        "reteco/workbench/leaderboard/standings.py": "from reteco.workbench.labels import pool\n",
    })
    graph = import_graph(package)
    assert upward_imports(graph) == [
        "reteco.codabench.program.scoring_program:2 -> reteco.workbench.codabench.bundle.builder"]
    assert upward_imports_in_codabench(graph) == [
        "reteco.workbench.codabench.bundle.builder:2 -> reteco.workbench.codabench.check.rules"]
    assert upward_imports_in_workbench(graph) == [
        "reteco.workbench.labels.pool:1 -> reteco.workbench.leaderboard.standings"]
    assert closure(graph, "reteco.codabench.program.scoring_program") >= {
        "reteco.workbench.codabench.bundle.builder", "reteco.workbench.codabench.check.rules"}


def test_only_the_package_getattr_may_load_the_api_lazily(tmp_path):
    package = _write(tmp_path, {
        "reteco/__init__.py": "__version__ = '1'\n\n\ndef __getattr__(name):\n    from reteco import api\n    return api\n",
        "reteco/api/__init__.py": "from reteco import __version__\n",
        "reteco/formats/__init__.py": "",
        "reteco/formats/runs.py": "def f():\n    from reteco import api\n",
    })
    graph = import_graph(package)
    assert graph["reteco"] == {}  # no circle reteco <-> reteco.api, no upward import from the top
    assert cycles(graph) == []
    # Anywhere else a lazy import counts: formats importing the API goes up.
    assert upward_imports(graph) == ["reteco.formats.runs:2 -> reteco.api"]


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


# ---------------------------------------------------------------- behaviour read from the rows

# A literal sub-track or benchmark id outside the table is a branch on a name: the row holds the
# fact (``row.step_topics``, ``row.evidence``, ``reference.benchmark.has_subtracks`` ...), and a
# new row would silently miss the branch. Every package is scanned but these, each for a reason:
ID_EXEMPT_PACKAGES = {
    "formats": "the readers of each format: FactIR's reader names FactIR's row, a reference names its sub-track",
    "release.prepare": "each sub-track's own reference writer (`reteco prepare`): what a sub-track's reader is",
    "release.synthetic": "the synthetic release: sample data made per sub-track",
    "workbench.judge_audit.golden_templates": "golden v3's case templates: data written per sub-track (each series' `subtrack:`)",
    "workbench.judge_audit.golden_v5_templates": "golden v5's case templates: data written per sub-track (each series' `subtrack:`)",
}
# Single literals allowed elsewhere, as (module's file name, literal): reason.
ID_EXEMPT_LITERALS = {
    ("screenshots.py", "2a"): "the refused-run screenshot is taken on one run-taking sub-track; any would do",
}
# "reteco" is also the package's and the scorer's name (paths, "scorer": {"name": "reteco"}); as a
# benchmark id it is flagged where it is compared or given as a default (``.get("benchmark", "reteco")``).
PACKAGE_NAME = PACKAGE_DIR.name


def literal_ids(package_dir: Path, ids: set[str]) -> list[str]:
    """Every string constant equal to one of ``ids`` in the package's subpackages, as
    ``module:line 'id'``, less the exemptions above. The package's own top-level modules (the
    table ``subtracks.py`` among them) are not scanned."""
    found = []
    for module, path in modules(package_dir).items():
        parts = module.split(".")
        if len(parts) < 3 or any(".".join(parts[1:]).startswith(p) for p in ID_EXEMPT_PACKAGES):
            continue  # a top-level module (the table) or an exempt package
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        compared = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                compared.update(id(n) for n in [node.left, *node.comparators])
                compared.update(id(e) for n in node.comparators if isinstance(n, (ast.Tuple, ast.List, ast.Set)) for e in n.elts)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
                compared.update(id(a) for a in node.args[1:])
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ids):
                continue
            if node.value == PACKAGE_NAME and id(node) not in compared:
                continue
            if (path.name, node.value) in ID_EXEMPT_LITERALS:
                continue
            found.append(f"{module}:{node.lineno} {node.value!r}")
    return sorted(found)


def test_no_literal_subtrack_or_benchmark_id_outside_the_table():
    from reteco.subtracks import BENCHMARKS, SUBTRACKS

    assert literal_ids(PACKAGE_DIR, set(SUBTRACKS) | set(BENCHMARKS)) == []


def test_the_id_check_finds_a_branch_on_a_name(tmp_path):
    package = _write(tmp_path, {
        "reteco/__init__.py": "",
        "reteco/subtracks.py": 'SUBTRACKS = {"1b": 1}\n',
        "reteco/scoring/__init__.py": "",
        "reteco/scoring/aggregate.py": 'def f(reference):\n    return reference.subtrack == "1b"\n',
        "reteco/scoring/submission.py": 'def g(m):\n    name = "reteco"  # the scorer\'s name\n    return m.get("benchmark", "reteco")\n',
        "reteco/formats/__init__.py": "",
        "reteco/formats/factir.py": 'ID = "factir"\n',
        "reteco/renamed/__init__.py": "",
        "reteco/renamed/screenshots.py": 'JOB = "2a"\nOTHER = "factir"\n',
    })
    assert literal_ids(package, {"1b", "2a", "reteco", "factir"}) == [
        "reteco.renamed.screenshots:2 'factir'",
        "reteco.scoring.aggregate:2 '1b'",
        "reteco.scoring.submission:3 'reteco'",
    ]


# ---------------------------------------------------------------- imports inside functions

DEVELOPMENT_DOC = Path(__file__).resolve().parents[1] / "docs" / "development.md"
DEFERRED_HEADING = "## Imports inside functions"


def deferred_import_rules(doc: str) -> list[tuple[list[str], list[str], str]]:
    """The rows of docs/development.md's table of allowed imports inside functions: (module
    patterns, imported-name patterns, reason), the patterns fnmatch globs in backticks."""
    import re

    section = doc.split(DEFERRED_HEADING, 1)[1].split("\n## ", 1)[0]
    rules = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("where", "") or set(cells[0]) <= {"-"}:
            continue
        rules.append((re.findall(r"`([^`]+)`", cells[0]), re.findall(r"`([^`]+)`", cells[1]), cells[2]))
    return rules


def deferred_imports(package_dir: Path) -> list[tuple[str, str, int]]:
    """(module, imported name, line) of every import inside a function of the package; ``from a
    import b`` imports ``a.b``."""
    found = []
    for module, path in modules(package_dir).items():
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    found += [(module, a.name, node.lineno) for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = "." * node.level + (node.module or "")
                    found += [(module, f"{base}.{a.name}", node.lineno) for a in node.names]
    return sorted(set(found))


def unlisted_deferred_imports(imports, rules) -> tuple[list[str], list[str]]:
    """(imports no rule allows, as ``module:line imported``; rules no import needs)."""
    from fnmatch import fnmatchcase

    def allows(rule, module, name) -> bool:
        where, what, _ = rule
        return any(fnmatchcase(module, w) for w in where) and any(fnmatchcase(name, n) for n in what)

    unlisted = [f"{m}:{line} {name}" for m, name, line in imports if not any(allows(r, m, name) for r in rules)]
    unused = [" ".join(r[0]) for r in rules if not any(allows(r, m, name) for m, name, _ in imports)]
    return unlisted, unused


def test_imports_inside_functions_are_the_ones_docs_development_lists():
    rules = deferred_import_rules(DEVELOPMENT_DOC.read_text(encoding="utf-8"))
    assert len(rules) >= 5 and all(reason for _, _, reason in rules)
    unlisted, unused = unlisted_deferred_imports(deferred_imports(PACKAGE_DIR), rules)
    assert unlisted == [], "import at the top, or add a row with its measured cost to docs/development.md"
    assert unused == [], "rows of docs/development.md that no import needs any more"


def test_the_deferred_import_check_finds_an_unlisted_import(tmp_path):
    package = _write(tmp_path, {
        "reteco/__init__.py": "",
        "reteco/scoring/__init__.py": "",
        "reteco/scoring/generation.py": "def f():\n    import json\n    from reteco.judge import prompts\n",
    })
    doc = (f"{DEFERRED_HEADING}\n\n| where | imports | why |\n|---|---|---|\n"
           "| `reteco.scoring.*` | `reteco.judge*` | measured |\n| `reteco.outputs.*` | `matplotlib*` | measured |\n")
    rules = deferred_import_rules(doc)
    assert unlisted_deferred_imports(deferred_imports(package), rules) == (
        ["reteco.scoring.generation:2 json"], ["reteco.outputs.*"]
    )


def test_the_public_api_imports_no_command():
    # The API and the CLI are two entry points over one scorer: what both need (the phase rules,
    # `formats.phase_record.phase_rules`) lives below them, so `import reteco.api` loads no CLI.
    graph = import_graph(PACKAGE_DIR)
    reached = sorted(m for m in closure(graph, "reteco.api") | closure(graph, "reteco.api.evaluation")
                     if m.startswith("reteco.commands"))
    assert reached == []
