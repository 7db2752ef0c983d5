"""Every docstring example in the package runs and prints what it shows."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import langchain_tiered_memory
from langchain_tiered_memory.errors import ConfigurationError

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(
        langchain_tiered_memory.__path__, prefix="langchain_tiered_memory."
    )
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    try:
        module = importlib.import_module(name)
    except ConfigurationError as exc:
        if not isinstance(exc.__cause__, ImportError):
            raise
        # A module of an optional extra that is not installed; its message names the extra.
        pytest.skip(f"{name}: {exc}")
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(module, name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
