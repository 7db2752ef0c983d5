"""``python -m langchain_tiered_memory``: the ``tiered-memory`` command line."""

from __future__ import annotations

from langchain_tiered_memory.cli.commands import main

if __name__ == "__main__":
    raise SystemExit(main())
