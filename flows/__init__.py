"""Prefect entry points: each wires src functions as tasks and nothing else."""
