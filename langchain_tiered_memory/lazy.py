"""Lazy re-exports for package ``__init__`` modules.

A subpackage names its public API in ``__init__`` without importing its
modules: each name is imported from its module on first use. Importing any
module of the package therefore never runs the other modules of its
subpackage first, so a package ``__init__`` cannot create an import circle
between modules that do not import each other.

Examples:
    >>> getattr_, dir_ = lazy_exports("pkg", {"sqrt": "math"})
    >>> getattr_("sqrt")(16.0)
    4.0
    >>> "sqrt" in dir_()
    True
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` that import each name on first use.

    Args:
        package: The package's ``__name__``.
        exports: Each public name and the module that defines it.

    Returns:
        ``(__getattr__, __dir__)`` to assign in the package's ``__init__``.
    """

    def getattr_(name: str) -> Any:
        module = exports.get(name)
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
        return sorted({*own, *exports})

    return getattr_, dir_
