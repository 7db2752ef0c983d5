"""Machinery shared by the tiers: scopes, arguments, plans, ranking, access counts."""
