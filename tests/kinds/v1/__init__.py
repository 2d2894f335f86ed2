"""The tests' schema of every kind (kinds.proto) and what scripts/generate makes of it."""
