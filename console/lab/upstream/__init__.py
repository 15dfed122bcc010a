"""Upstream programs the lab runs (Go modules, one directory each), built from source into a cache."""
