"""Whole runs: each pipeline owns its run directory and runs its stages as a list of steps."""
