"""Two notebooks of one name created at once under one parent: one wins, the others are
refused with `notebook_name_taken` — real transactions on separate connections."""

import uuid

import pytest

from grove.kernel.errors import Conflict
from notebooks import selectors, services
from tests import factories
from tests.notebooks.test_concurrency import run_parallel

pytestmark = pytest.mark.slow


def test_two_creates_of_one_name_at_once_one_wins(committed):
    owner = factories.owner()
    parent = factories.notebook(owner, "Projects")
    results = run_parallel(4, lambda i: services.notebook_create(
        actor=owner, operation_id=uuid.uuid4(), name=("Launch", "launch", " LAUNCH", "Launch")[i],
        parent_id=parent.id))
    made = [r for r in results if not isinstance(r, Exception)]
    lost = [r for r in results if isinstance(r, Exception)]
    assert len(made) == 1 and len(lost) == 3
    assert {(type(e), e.code) for e in lost} == {(Conflict, "notebook_name_taken")}
    names = [nb.name for nb in selectors.notebook_list(actor=owner)]
    assert sorted(n.casefold() for n in names) == ["launch", "projects"]
