"""The ``tiered-memory`` command line and the demo."""

from langchain_tiered_memory.cli.commands import main

__all__ = ["main"]
