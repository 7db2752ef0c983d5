"""The package's modules import each other without circles.

Every module of ``langchain_tiered_memory`` is parsed with ``ast``; every import of
a package module counts, wherever it is written: at the top, inside a function, or
under ``if TYPE_CHECKING:`` (a type-only circle is still a circle a reader has to
untangle). A package ``__init__`` that re-exports names is a module of its own.
Private names are checked in ``test_private_members.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import langchain_tiered_memory

PACKAGE = langchain_tiered_memory.__name__
ROOT = Path(langchain_tiered_memory.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def enclosing_module(name: str) -> str:
    """The package module that ``name`` (a module or a name in one) lives in."""
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def imported_names(module: str, tree: ast.AST) -> list[tuple[str, str]]:
    """``(module imported, name imported from it)`` for every package import in ``tree``."""
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, "") for a in node.names if a.name.split(".")[0] == PACKAGE]
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                source = f"{base}.{source}" if source else base
            if source.split(".")[0] == PACKAGE:
                found += [(source, a.name) for a in node.names]
    return found


def import_graph() -> dict[str, set[str]]:
    """Each package module and the package modules it imports."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        targets = set()
        for source, name in imported_names(module, ast.parse(path.read_text(encoding="utf-8"))):
            submodule = f"{source}.{name}"
            targets.add(submodule if submodule in MODULES else enclosing_module(source))
        graph[module] = targets - {module}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` as ``[a, b, ..., a]``, or ``None``."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(node: str) -> list[str] | None:
        path.append(node)
        on_path.add(node)
        for target in sorted(graph[node]):
            if target in on_path:
                return [*path[path.index(target) :], target]
            if target not in done:
                cycle = visit(target)
                if cycle:
                    return cycle
        path.pop()
        on_path.discard(node)
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done:
            cycle = visit(start)
            if cycle:
                return cycle
    return None


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    # top level, function body, TYPE_CHECKING block, re-exporting __init__ (spot checks)
    assert f"{PACKAGE}.user_memory" in graph[f"{PACKAGE}.memory"]
    assert f"{PACKAGE}.writeback.handlers" in graph[f"{PACKAGE}.memory"]  # inside open()
    assert f"{PACKAGE}.stores.qdrant_store" in graph[f"{PACKAGE}.stores"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_circle_between_the_package_modules() -> None:
    cycle = find_cycle(import_graph())
    if cycle:
        pytest.fail("import circle: " + " -> ".join(cycle), pytrace=False)
