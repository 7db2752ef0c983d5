"""The embedded engine: a Qdrant Edge shard on disk, its files, lock and optimisation."""
