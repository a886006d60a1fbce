"""The import graph of ``src/armlab`` has layers: no circles, the plugins below the engine, and
the orchestrator's parts as docs/architecture.md draws them ("Who may import whom").

Every import counts, wherever it is written: at the top of a module, inside a function, under
``TYPE_CHECKING``; relative imports are resolved against the importing module.  ``from
armlab.x import y`` is an edge to the module ``armlab.x.y`` when that is a module, otherwise
to ``armlab.x``; a package's ``__init__`` is the node of the package's own name.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src"

#: What the plugins may not import: the layers that build on them.
ABOVE_PLUGINS = ("armlab.orchestrator", "armlab.adapters", "armlab.plan", "armlab.service")

#: What the safeguards' statistics may not import: they are called by the live experiment.
ABOVE_SAFEGUARDS = (*ABOVE_PLUGINS, "armlab.cli", "armlab.client", "armlab.plugins")


def _module_files() -> dict[str, Path]:
    """Every module of the ``armlab`` package by dotted name."""
    modules = {}
    for path in sorted((SOURCE / "armlab").rglob("*.py")):
        parts = list(path.relative_to(SOURCE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = _module_files()


def _imported_names(module: str, source: str, *, is_package: bool = False) -> Iterator[str]:
    """The dotted names one module imports, wherever written, with relative imports resolved."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base


def _graph() -> dict[str, set[str]]:
    """Module -> the armlab modules it imports (the nearest enclosing module of each name)."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        targets = set()
        for name in _imported_names(module, path.read_text(), is_package=path.name == "__init__.py"):
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_counts_every_kind_of_import():
    source = """
from typing import TYPE_CHECKING
import armlab.errors
from armlab.plugins import registry, hookimpl
from . import bounds
from .._fast import warm_arms
if TYPE_CHECKING:
    from armlab.plan import ExperimentPlan
def later():
    from armlab.orchestrator.montecarlo.metrics import recommendation_errors
"""
    names = set(_imported_names("armlab.plugins.regret.base", source))
    assert names >= {
        "armlab.errors",
        "armlab.plugins.registry",
        "armlab.plugins",
        "armlab.plugins.regret.bounds",
        "armlab.plugins._fast.warm_arms",
        "armlab.plan",
        "armlab.orchestrator.montecarlo.metrics",
    }
    assert set(_imported_names("armlab.plugins", "from . import registry", is_package=True)) == {
        "armlab.plugins.registry"
    }


def test_cycles_are_the_strongly_connected_components():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_plugins_import_nothing_from_the_layers_above_them():
    graph = _graph()
    offending = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module == "armlab.plugins" or module.startswith("armlab.plugins.")
        for target in targets
        if any(target == layer or target.startswith(layer + ".") for layer in ABOVE_PLUGINS)
    )
    assert offending == []


def test_safeguards_import_nothing_from_the_layers_that_call_them():
    offending = sorted(
        f"{module} -> {target}"
        for module, targets in _graph().items()
        if module == "armlab.safeguards" or module.startswith("armlab.safeguards.")
        for target in targets
        if any(target == layer or target.startswith(layer + ".") for layer in ABOVE_SAFEGUARDS)
    )
    assert offending == []


def test_no_import_circle_among_armlab_modules():
    assert _cycles(_graph()) == []


def _in(module: str, part: str) -> bool:
    full = f"armlab.orchestrator.{part}"
    return module == full or module.startswith(full + ".")


def test_the_orchestrator_layers_import_only_downwards():
    """The journal imports nothing from the live driver, the two drivers never import each
    other, and the decision core imports neither."""
    forbidden = {
        "journal": ("live", "montecarlo", "runner", "core"),
        "montecarlo": ("live", "journal", "runner"),
        "live": ("montecarlo", "runner"),
        "core": ("live", "montecarlo", "journal", "runner"),
    }
    wrong = [
        f"{module} imports {target}"
        for module, targets in _graph().items()
        for layer, banned in forbidden.items()
        if _in(module, layer)
        for target in targets
        if any(_in(target, b) for b in banned)
    ]
    assert wrong == []


def test_the_architecture_page_shows_every_module_of_the_orchestrator():
    """docs/architecture.md's tree of orchestrator/ names each module once, and only real ones."""
    page = (SOURCE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    tree = page.split("## Where the code lives", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    shown, folders = set(), []
    for line in tree.splitlines()[1:]:  # below "orchestrator/"
        depth = (len(line) - len(line.lstrip())) // 2 - 1
        entry = line.split()[0]
        folders[depth:] = [entry] if entry.endswith("/") else []
        if entry.endswith(".py"):
            shown.add("".join(folders[:depth]) + entry)
    root = SOURCE / "armlab" / "orchestrator"
    real = {p.relative_to(root).as_posix() for p in root.rglob("*.py")}
    real -= {p for p in real if p.endswith("/__init__.py")}
    assert shown == real
