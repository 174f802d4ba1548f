"""Fixtures of the links tests: the owner and their signed-in browser client."""

from tests.notebooks.conftest import owner, web  # noqa: F401 - fixtures, shared
