"""A broken install fails the run: every core dependency is installed, in range, and imports.

Only the optional extras may be missing; the tests that need one skip, naming it.
"""

from __future__ import annotations

import functools
import importlib
from collections import defaultdict
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

DISTRIBUTION = "langchain-tiered-memory"


def core_requirements() -> list[Requirement]:
    """The package's own dependencies (no extra marker), from its installed metadata."""
    requirements = [Requirement(text) for text in metadata.requires(DISTRIBUTION) or []]
    return [r for r in requirements if r.marker is None]


@functools.cache
def top_level_modules() -> dict[str, list[str]]:
    """The importable top-level modules of every installed distribution, by its name."""
    modules: dict[str, list[str]] = defaultdict(list)
    for module, distributions in metadata.packages_distributions().items():
        for distribution in distributions:
            modules[canonicalize_name(distribution)].append(module)
    return modules


def test_the_core_dependencies_are_read_from_the_package() -> None:
    names = {canonicalize_name(r.name) for r in core_requirements()}
    assert {"langgraph", "qdrant-edge-py", "tiktoken", "onnxruntime"} <= names
    assert "langchain-openai" not in names  # an optional extra, not core


@pytest.mark.parametrize("requirement", core_requirements(), ids=str)
def test_core_dependency_is_installed_and_imports(requirement: Requirement) -> None:
    try:
        version = metadata.version(requirement.name)
    except metadata.PackageNotFoundError:
        pytest.fail(
            f"{requirement.name} is a core dependency and is not installed: "
            f'pip install "{requirement}" (or reinstall the package)',
            pytrace=False,
        )
    assert requirement.specifier.contains(version, prereleases=True), (
        f"{requirement.name} {version} is installed, the package needs {requirement}"
    )
    modules = [
        m for m in top_level_modules()[canonicalize_name(requirement.name)] if not m.startswith("_")
    ]
    assert modules, f"{requirement.name} is installed but provides no importable module"
    for module in modules:
        importlib.import_module(module)
