"""No module of the package uses another module's private members.

A single leading underscore marks a name as private to the module that defines
it. Every module of ``langchain_tiered_memory`` is parsed with ``ast`` and each
of these counts as a use:

- ``obj._name`` (read, written or deleted) where ``obj`` is not ``self``,
  ``cls`` or ``super()``;
- ``getattr(obj, "_name")``, ``hasattr``, ``setattr`` and ``delattr`` alike;
- ``from module import _name``.

An attribute use is the module's own business when ``_name`` is a member of a
class the module defines (a method, a class attribute or an attribute its
methods set on ``self``/``cls``) and of no class in any other package module:
then the object can only be one of the module's own. Dunder names are public,
and so are the ``NamedTuple`` methods (``_replace``, ``_asdict``, ...).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import langchain_tiered_memory

PACKAGE = langchain_tiered_memory.__name__
ROOT = Path(langchain_tiered_memory.__file__).parent

NAMEDTUPLE_API = {"_asdict", "_field_defaults", "_fields", "_make", "_replace"}
"""Public methods of every NamedTuple, whose names start with an underscore."""

ATTRIBUTE_FUNCTIONS = {"getattr", "hasattr", "setattr", "delattr"}

ALLOWED = {
    (
        f"{PACKAGE}.export_import",
        "_data",
    ): "LangGraph's InMemoryStore has no way to write an item's times: import sets them on "
    "its item dictionary, a documented best effort (see export_import)",
}
"""``(module, private name)`` pairs a third-party API forces, each with its reason."""


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): ast.parse(p.read_text(encoding="utf-8")) for p in ROOT.rglob("*.py")}


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in NAMEDTUPLE_API


def own_object(node: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``: an object using its own (or its base's) members."""
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id == "super"
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def class_members(tree: ast.AST) -> set[str]:
    """The names of the members of every class ``tree`` defines."""
    members: set[str] = set()
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                members.add(node.name)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                members.add(node.target.id)
            elif isinstance(node, ast.Assign):
                members.update(t.id for t in node.targets if isinstance(t, ast.Name))
        for node in ast.walk(cls):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and own_object(node.value)
            ):
                members.add(node.attr)
    return members


def private_uses(tree: ast.AST) -> list[tuple[str, int, str]]:
    """``(name, line, how)`` of every use of a private name on another object, or imported."""
    uses: list[tuple[str, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = "." * node.level + (node.module or "")
            uses += [
                (a.name, node.lineno, f"imports {a.name} from {source}")
                for a in node.names
                if private(a.name)
            ]
        elif isinstance(node, ast.Attribute) and private(node.attr) and not own_object(node.value):
            uses.append((node.attr, node.lineno, f"uses {ast.unparse(node)}"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ATTRIBUTE_FUNCTIONS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and private(node.args[1].value)
            and not own_object(node.args[0])
        ):
            uses.append((node.args[1].value, node.lineno, f"calls {ast.unparse(node)}"))
    return uses


def leaks(modules: dict[str, ast.AST]) -> list[str]:
    """One line per use of a private name that belongs to another module."""
    members = {name: class_members(tree) for name, tree in modules.items()}
    found = []
    for module, tree in sorted(modules.items()):
        elsewhere = set().union(*(m for name, m in members.items() if name != module))
        for name, line, how in private_uses(tree):
            imported = how.startswith("imports")
            own = not imported and name in members[module] and name not in elsewhere
            if not own and (module, name) not in ALLOWED:
                found.append(f"{module} line {line}: {how}")
    return found


def test_the_check_finds_each_kind_of_use() -> None:
    trees = {
        "a": ast.parse(
            "from b import _hidden\n"
            "x.y._inner\n"
            "getattr(obj, '_state', None)\n"
            "class A:\n"
            "    def __init__(self):\n"
            "        self._mine = 1\n"
            "        self._shared = 2\n"
            "def f(a, other):\n"
            "    a._mine, other._shared, t._replace(), self._base, obj.__dict__\n"
        ),
        "b": ast.parse("class B:\n    _shared = 0\n"),
    }
    assert leaks(trees) == [
        "a line 1: imports _hidden from b",
        "a line 2: uses x.y._inner",
        "a line 3: calls getattr(obj, '_state', None)",
        "a line 9: uses other._shared",  # B has a _shared too: the object may be a B
    ]


def test_no_module_uses_a_private_member_of_another_module() -> None:
    found = leaks(MODULES)
    if found:
        pytest.fail("\n".join(found), pytrace=False)


def test_every_allowance_is_still_needed() -> None:
    used = {(m, name) for m, tree in MODULES.items() for name, _, _ in private_uses(tree)}
    assert set(ALLOWED) <= used, f"allowances no longer needed: {set(ALLOWED) - used}"
