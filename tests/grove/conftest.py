import pytest

from tests.grove.processes import make_home, remove_home


@pytest.fixture
def home():
    """A fresh, empty Grove data folder (removed afterwards, its server stopped)."""
    path = make_home()
    yield path
    remove_home(path)
