"""The orchestrator's layering (docs/architecture.md, "Who may import whom").

Every import counts: at module level, inside functions and under ``TYPE_CHECKING``.  The
journal imports nothing from the live driver, the two drivers never import each other, the
decision core imports neither, and the orchestrator's modules form no import circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import armlab

SRC = Path(armlab.__file__).parent.parent
ORCHESTRATOR = "armlab.orchestrator"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``path`` (module ``name``) imports, anywhere in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if node.level:
                base = ".".join([package.rsplit(".", node.level - 1)[0], node.module])
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in (SRC / "armlab" / "orchestrator").rglob("*.py")}
    known = set(paths)
    return {name: _imports(path, name, known) for name, path in paths.items()}


def _in(module: str, part: str) -> bool:
    full = f"{ORCHESTRATOR}.{part}"
    return module == full or module.startswith(full + ".")


def test_the_graph_sees_every_kind_of_import(tmp_path):
    """The checker counts imports inside functions and under TYPE_CHECKING (so it can fail)."""
    module = tmp_path / "probe.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from armlab.orchestrator.live import types\n"
        "def f():\n    from .sibling import thing\n"
    )
    known = {"armlab.orchestrator.live.types", "pkg.sibling"}
    assert _imports(module, "pkg.probe", known) == known


def test_the_orchestrator_has_no_import_circle():
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                raise AssertionError("import circle: " + " -> ".join([*path[path.index(target):], target]))
            if target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_layers_import_only_downwards():
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
    page = (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    tree = page.split("## Where the code lives", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    shown, folders = set(), []
    for line in tree.splitlines()[1:]:  # below "orchestrator/"
        depth = (len(line) - len(line.lstrip())) // 2 - 1
        entry = line.split()[0]
        folders[depth:] = [entry] if entry.endswith("/") else []
        if entry.endswith(".py"):
            shown.add("".join(folders[:depth]) + entry)
    root = SRC / "armlab" / "orchestrator"
    real = {p.relative_to(root).as_posix() for p in root.rglob("*.py")}
    real -= {p for p in real if p.endswith("/__init__.py")}
    assert shown == real
