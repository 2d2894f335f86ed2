"""Tests of projectops (a package: modules import each other as tests.<folder>.<module>)."""
