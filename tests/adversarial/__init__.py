"""Hostile peers against the real programs: servers and clients on 127.0.0.1, bounded in time."""
