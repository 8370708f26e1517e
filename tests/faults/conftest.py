"""Fixtures shared with tests/orchestrate/test_fault_tolerance.py: a scheduler and two
workers as separate processes (``cluster``), exhaustive nltcs caches (``caches``)."""

from tests.orchestrate.test_fault_tolerance import caches, cluster  # noqa: F401
