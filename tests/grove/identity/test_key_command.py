"""`grove key create|list|revoke` (issue: keys from the command line)."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from grove.models import Account
from tests import factories
from tests.api.conftest import Caller, data, error

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out, err = StringIO(), StringIO()
    call_command("key", *args, stdout=out, stderr=err)
    return out.getvalue().strip()


def test_create_prints_a_working_key_once_and_revoke_stops_it():
    owner = factories.owner()
    user = Account.objects.get(id=owner.account_id).username
    project = factories.notebook(owner, "Project")
    key = run("create", "--user", user, "--name", "laptop", "--notebook", str(project.id),
              "--read-only")
    assert key.startswith("grv_") and "\n" not in key
    caller = Caller(Client(), key)
    factories.note(owner, "in the project", notebook_id=project.id)
    factories.note(owner, "personal, not granted")
    assert [n["note"]["content"] for n in data(caller.get("/notes"))] == ["in the project"]
    error(caller.post("/notes", {"content": "x", "kind": "fact"}), 403, "insufficient_capability")

    listing = run("list", "--user", user)
    assert "laptop" in listing and key not in listing and "memory:read " in listing + " "
    connection_id = listing.split()[0]
    assert "revoked" in run("revoke", "--user", user, connection_id)
    error(caller.get("/notes"), 401, "invalid_token")


def test_all_grants_every_notebook_and_personal():
    owner = factories.owner()
    user = Account.objects.get(id=owner.account_id).username
    key = run("create", "--user", user, "--name", "agent", "--all")
    caller = Caller(Client(), key)
    assert caller.post("/notes", {"content": "from the agent", "kind": "fact"}).status_code == 201
    assert data(caller.post("/notebooks", {"name": "New"}))["name"] == "New"


@pytest.mark.parametrize("args", [
    ("create", "--user", "nobody-here", "--name", "x", "--all"),
    ("create", "--user", "{user}", "--name", " ", "--all"),
    ("create", "--user", "{user}", "--name", "x", "--notebook", "not-an-id"),
    ("revoke", "--user", "{user}", "00000000-0000-0000-0000-000000000000"),
])
def test_bad_input_is_a_clear_error(args):
    owner = factories.owner()
    user = Account.objects.get(id=owner.account_id).username
    with pytest.raises(CommandError):
        run(*(a.replace("{user}", user) for a in args))
