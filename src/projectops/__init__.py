"""projectops."""
