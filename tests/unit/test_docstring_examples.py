"""Every docstring example in the package runs and prints what it shows."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import langchain_tiered_memory

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
    except ImportError as exc:  # a module of an optional extra that is not installed
        pytest.skip(f"{name} needs an optional dependency: {exc}")
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(module, name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
