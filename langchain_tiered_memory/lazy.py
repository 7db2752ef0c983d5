"""Lazy re-exports for package ``__init__`` modules.

A subpackage names its public API in ``__init__`` without importing its
modules: each name is imported from its module on first use. Importing any
module of the package therefore never runs the other modules of its
subpackage first, so a package ``__init__`` cannot create an import circle
between modules that do not import each other. The names and their modules
are the ``from ... import`` lines of the ``__init__``'s ``if TYPE_CHECKING:``
block (which type checkers read), so each is declared once.

Examples:
    >>> getattr_, dir_ = lazy_exports("pkg", {"sqrt": "math"})
    >>> getattr_("sqrt")(16.0)
    4.0
    >>> "sqrt" in dir_()
    True
"""

from __future__ import annotations

import ast
import functools
import importlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["lazy_exports", "type_checking_imports"]


def type_checking_imports(init: str) -> dict[str, str]:
    """Each name imported under ``if TYPE_CHECKING:`` in the file ``init``, and its module."""
    tree = ast.parse(Path(init).read_text(encoding="utf-8"))
    return {
        alias.asname or alias.name: node.module
        for block in tree.body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def lazy_exports(
    package: str, exports: Mapping[str, str] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` that import each name on first use.

    Args:
        package: The package's ``__name__``.
        exports: Each public name and the module that defines it; by default the
            package's ``if TYPE_CHECKING:`` imports (read on first use).

    Returns:
        ``(__getattr__, __dir__)`` to assign in the package's ``__init__``.
    """

    @functools.cache
    def names() -> Mapping[str, str]:
        if exports is not None:
            return exports
        return type_checking_imports(str(sys.modules[package].__file__))

    def getattr_(name: str) -> Any:
        module = names().get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace = sys.modules.get(package)
        if namespace is not None:
            setattr(namespace, name, value)  # later reads skip this function
        return value

    def dir_() -> list[str]:
        namespace = sys.modules.get(package)
        own = list(vars(namespace)) if namespace is not None else []
        return sorted({*own, *names()})

    return getattr_, dir_
