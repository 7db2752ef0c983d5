"""Durable write-back: an SQLite outbox of memory writes, applied with retries."""
