"""Tests of projectops."""
