"""The layout is the architecture (docs/architecture.md): each module's path says its layer, and a module imports
only from its own layer or the layers below it, with no circle of imports anywhere.

Every ``import`` is read with ``ast``, those inside functions included: an import deferred for start-up speed is
still a dependency. Renderers (``reports/``) read the report alone: they import each other, the report's record
(``conformance.results``) and nothing else of the suite.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The design card's top-level folders ship inside the one import package (pyproject.toml's package-dir).
FOLDERS = {"conformance": ROOT / "conformance", "conformance.reports": ROOT / "reports",
           "conformance.implementations": ROOT / "implementations", "conformance.fixtures": ROOT / "fixtures"}

# Bottom to top. A module belongs to the first layer one of whose prefixes names it or a package above it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("contract", ("conformance.adapter", "conformance.config", "conformance.weights", "conformance.tolerances",
                  "conformance.errors", "conformance.compare", "conformance.provenance", "conformance.results",
                  "conformance.fixtures.golden", "conformance.fixtures")),
    ("reports", ("conformance.reports",)),
    ("paper", ("conformance.paper",)),
    ("adapters", ("conformance.adapters",)),
    ("implementations", ("conformance.implementations",)),
    ("fixture checks", ("conformance.fixtures.verify", "conformance.fixtures.verify_rounding",
                        "conformance.fixtures.verify_positional", "conformance.fixtures.verify_layers",
                        "conformance.fixtures.verify_schedule", "conformance.fixtures.verify_smoothing",
                        "conformance.fixtures.verify_counts", "conformance.fixtures.verify_listings",
                        "conformance.fixtures.verify_trained", "conformance.fixtures.verify_expressions")),
    ("problems", ("conformance.problems",)),
    ("boundary", ("conformance.boundary",)),
    ("diagnosis", ("conformance.diagnosis",)),
    ("judging", ("conformance.judging",)),
    ("run", ("conformance.run",)),
    ("grading", ("conformance.grading",)),
    ("commands", ("conformance.cli", "conformance.api", "conformance.__main__", "conformance.fixtures.regenerate")),
]
FACADE = "conformance"  # the package itself: PEP 562 names from the contract, imported by adapters written by users
# ... and the Python API's names, read lazily from these (the layers above: ``certify`` runs the whole suite).
FACADE_API = ("conformance.api", "conformance.reports.report")
RENDERERS_MAY_READ = ("conformance.reports", "conformance.results")


def modules() -> dict[str, Path]:
    found = {}
    for package, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if package == "conformance" and parts[0] in ("reports", "implementations", "fixtures"):
                continue
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


MODULES = modules()


def owner(name: str) -> str | None:
    """The module an imported name lives in (``conformance.paper.formulas.lrate`` -> ``conformance.paper.formulas``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> list[tuple[str, int]]:
    """Every module of the suite that ``module`` imports, with the line, wherever the import statement sits."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            target = owner(name) if name.startswith("conformance") else None
            if target and target != module:
                found.append((target, node.lineno))
    return found


def layer_of(module: str) -> int:
    best = None
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (rank, len(prefix))
    if module == FACADE:
        return 0
    assert best is not None, f"{module} sits in no layer: add its package to LAYERS and to docs/architecture.md"
    return best[0]


def name_of(module: str) -> str:
    return LAYERS[layer_of(module)][0]


GRAPH = {module: imports_of(module) for module in MODULES}


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


def test_no_module_imports_from_a_layer_above_its_own():
    upward = [f"{module} ({name_of(module)}) imports {target} ({name_of(target)}) at line {line}"
              for module, targets in GRAPH.items() for target, line in targets
              if layer_of(target) > layer_of(module)]
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


def test_renderers_read_only_the_report():
    reads = [f"{module} imports {target} at line {line}"
             for module, targets in GRAPH.items() if layer_of(module) == LAYER_RANK["reports"]
             for target, line in targets if not target.startswith(RENDERERS_MAY_READ)]
    assert not reads, "a renderer reads more than the report:\n" + "\n".join(reads)


def test_no_circle_of_imports():
    circles = strongly_connected(defaultdict(set, {m: {t for t, _ in ts} for m, ts in GRAPH.items()}))
    assert not circles, "circles of imports:\n" + "\n".join(" <-> ".join(sorted(c)) for c in circles)


LAYER_RANK = {name: rank for rank, (name, _) in enumerate(LAYERS)}


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm; the components of more than one module (or a module importing itself) are circles."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("name", [name for name, _ in LAYERS])
def test_every_layer_is_described_in_the_architecture_page(name):
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert f"| {name} |" in page, f"docs/architecture.md's layer table has no row for {name!r}"


def figures() -> dict:
    """The structure in numbers: modules per package, imports (inside functions, against the order), circles,
    ``global`` statements."""
    per_package: dict[str, int] = defaultdict(int)
    for module, path in MODULES.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        per_package[package] += 1
    imports = [(m, t) for m, ts in GRAPH.items() for t, _ in ts]
    inside = sum(1 for m in MODULES for node in ast.walk(ast.parse(MODULES[m].read_text()))
                 if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                 for child in ast.walk(node) if isinstance(child, ast.Import | ast.ImportFrom)
                 and any(owner(n) for n in _imported_names(child, m)))
    globals_ = sum(1 for m in MODULES for node in ast.walk(ast.parse(MODULES[m].read_text()))
                   if isinstance(node, ast.Global))
    return {"modules per package": dict(sorted(per_package.items())),
            "imports": len(imports), "imports inside functions": inside,
            "imports against the layer order": sum(1 for m, t in imports if layer_of(t) > layer_of(m)),
            "circles": len(strongly_connected(defaultdict(set, {m: {t for t, _ in ts} for m, ts in GRAPH.items()}))),
            "global statements": globals_}


def _imported_names(node: ast.Import | ast.ImportFrom, module: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.startswith("conformance")]
    base = node.module or ""
    if node.level:
        package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
        anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(anchor + ([base] if base else []))
    return [f"{base}.{alias.name}" for alias in node.names if base.startswith("conformance")]


if __name__ == "__main__":  # python tests/test_layers.py: the figures
    for key, value in figures().items():
        print(f"{key}: {value}")


def test_the_facade_names_the_contract_and_the_python_api_only():
    """The facade's lazy names (``_SOURCES``, strings no import statement shows) come from the contract, and the
    Python API's from ``FACADE_API``; the API's names stay out of ``__all__``, which adapters import."""
    import conformance

    sources = conformance._SOURCES
    assert {m for m in sources if m not in FACADE_API and name_of(m) != "contract"} == set()
    api_names = {name for m in FACADE_API for name in sources.get(m, ())}
    assert api_names == {"certify", "DraftIncomplete", "Report"} and not api_names & set(conformance.__all__)
