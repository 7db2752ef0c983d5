"""Procedural memory: tool-use statistics, learned strategies, warnings."""
