"""Benchmark scripts that print tables (run them with ``python -m benchmarks.<name>``)."""
