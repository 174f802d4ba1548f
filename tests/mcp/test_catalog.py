"""Resources and prompts on `/mcp` in both eras (Django test client, real database):
listing across providers with a signed cursor, reading within the grant with one
not-found answer for every reason, prompts and their arguments, and how the errors a
feature app raises become JSON-RPC errors. The real catalog is `notebooks.mcp_context`;
`catalog` puts a small test provider before it (tests/mcp/catalog_fixtures.py)."""

from __future__ import annotations

import uuid

import pytest

from tests import factories
from tests.api.conftest import new_key
from tests.mcp.catalog_fixtures import UNICODE_URI
from tests.mcp.helpers import handshake, modern

pytestmark = pytest.mark.django_db

ERAS = {"handshake": handshake, "modern": modern}
NOT_FOUND = {"handshake": (200, -32002), "modern": (400, -32602)}
INVALID = {"handshake": 200, "modern": 400}


@pytest.fixture
def owner():
    return factories.owner()


@pytest.fixture
def key(owner) -> str:
    return new_key(owner)[0]


def result(response) -> dict:
    assert response.status_code == 200, response.content
    return response.json()["result"]


def error(response, status: int, code: int) -> dict:
    assert response.status_code == status, response.content
    found = response.json()["error"]
    assert found["code"] == code, found
    return found


def every_page(send, key: str) -> tuple[list[str], list[str]]:
    """(every URI listed, the cursors handed out), following nextCursor to the end."""
    uris, cursors, cursor = [], [], None
    while True:
        page = result(send(key, "resources/list", {"cursor": cursor} if cursor else {}))
        uris += [r["uri"] for r in page["resources"]]
        cursor = page.get("nextCursor")
        if cursor is None:
            return uris, cursors
        cursors.append(cursor)
        assert len(cursors) < 20


@pytest.mark.parametrize("era", ERAS)
def test_the_listing_merges_providers_in_order_page_by_page(catalog, owner, key, era):
    garden = factories.notebook(owner, "Garden")
    note = factories.note(owner, "Plant garlic in October.", notebook_id=garden.id)
    personal = factories.note(owner, "Dentist on Friday.")
    uris, cursors = every_page(ERAS[era], key)
    assert uris[:5] == [f"fixture://item/{n}" for n in range(5)]  # pages of 2, 2, 1
    assert len(cursors) == 3
    assert uris[5:] == ["brief://all", "brief://personal", f"brief://{garden.id}",
                        f"notebook://{garden.id}", f"note://{personal.id}",
                        f"note://{note.id}"]
    first = result(ERAS[era](key, "resources/list"))["resources"][0]
    assert first == {"uri": "fixture://item/0", "name": "item-0", "title": "Item 0",
                     "mimeType": "text/plain"}


@pytest.mark.parametrize("era", ERAS)
def test_a_cursor_is_signed_and_bound_to_the_caller(catalog, owner, key, era):
    send = ERAS[era]
    _uris, cursors = every_page(send, key)
    other, _ = new_key(owner)  # the same account, another connection
    stranger, _ = new_key(factories.owner())
    tampered = cursors[0][:-3] + ("AAA" if not cursors[0].endswith("AAA") else "BBB")
    for who, cursor in ((key, tampered), (key, "offset:2"), (key, "x" * 3000),
                        (key, 7), (other, cursors[0]), (stranger, cursors[0])):
        refused = error(send(who, "resources/list", {"cursor": cursor}), INVALID[era], -32602)
        assert refused["data"] == {"code": "invalid_cursor"}, cursor
    # The provider's own cursor, carried inside: the listing goes on where it stopped.
    second = result(send(key, "resources/list", {"cursor": cursors[0]}))["resources"]
    assert [r["uri"] for r in second] == ["fixture://item/2", "fixture://item/3"]


def test_a_listing_cursor_is_the_kernels_signed_cursor(catalog, owner):
    """One signer for every list (`grove.kernel.paging`): the listing's cursor opens with
    it, bound to the caller, made for the providers in their order."""
    from grove.interfaces import mcp_resources
    from grove.interfaces.mcp_catalog import resource_providers
    from grove.kernel.paging import caller_binding, cursor_read

    key, actor = new_key(owner)
    _uris, cursors = every_page(handshake, key)
    made_for = "|".join(",".join(p.schemes) for p in resource_providers())
    opened = cursor_read(cursors[0], salt=mcp_resources.CURSOR_SALT,
                         binding=caller_binding(actor), fingerprint=made_for)
    assert opened.key == (0, "offset:2")  # the test provider's own cursor, carried inside


@pytest.mark.parametrize("era", ERAS)
def test_reading_within_the_grant_and_one_answer_for_everything_else(owner, era):
    send = ERAS[era]
    shared = factories.notebook(owner, "Shared")
    hidden = factories.notebook(owner, "Hidden")
    seen = factories.note(owner, "Shared walnut.", notebook_id=shared.id)
    ungranted = factories.note(owner, "Hidden walnut.", notebook_id=hidden.id)
    foreign = factories.note(factories.owner(), "Someone else's walnut.")
    key, _ = new_key(owner, all_notebooks=False, personal=False, notebooks=[shared.id])

    read = result(send(key, "resources/read", {"uri": f"note://{seen.id}"}))
    [content] = read["contents"]
    assert content["uri"] == f"note://{seen.id}" and content["mimeType"] == "text/markdown"
    assert "Shared walnut." in content["text"]
    assert "Hidden walnut." not in str(result(send(key, "resources/list")))

    status, code = NOT_FOUND[era]
    answers = []
    for uri in (f"note://{ungranted.id}", f"note://{foreign.id}", f"note://{uuid.uuid4()}",
                f"notebook://{hidden.id}", f"brief://{hidden.id}", f"note://{ungranted.id}@1",
                "nothing://at/all", "no-scheme", f"NOTE://{ungranted.id}"):
        found = error(send(key, "resources/read", {"uri": uri}), status, code)
        assert found["data"] == {"uri": uri, "code": "resource_not_found"}
        answers.append({**found, "data": {**found["data"], "uri": "…"}})
    assert all(answer == answers[0] for answer in answers)  # nothing to tell them apart
    assert answers[0]["message"] == "Resource not found."
    # A version the readable note never had names nothing hidden: said as REST says it.
    missing = error(send(key, "resources/read", {"uri": f"note://{seen.id}@9"}), status, code)
    assert missing["data"] == {"uri": f"note://{seen.id}@9", "code": "version_not_found",
                               "currentVersion": 1}
    error(send(key, "resources/read", {}), INVALID[era], -32602)
    # A uri that is no string: the handshake era says so; in 2026 no Mcp-Name header can
    # mirror it, which is the header mismatch the SDK server answers too.
    error(send(key, "resources/read", {"uri": 5}), INVALID[era],
          -32602 if era == "handshake" else -32020)


@pytest.mark.parametrize("era", ERAS)
def test_domain_errors_keep_their_machine_code(catalog, owner, era):
    send = ERAS[era]
    note = factories.note(owner, "Write-only keys cannot read this.")
    write_only, _ = new_key(owner, capabilities=["memory:write"])
    for method, params in (("resources/read", {"uri": f"note://{note.id}"}),
                           ("resources/list", {})):
        denied = error(send(write_only, method, params), 200, -32003)
        assert denied["data"]["code"] == "insufficient_capability", method
    key, _ = new_key(owner)
    busy = error(send(key, "resources/read", {"uri": "fixture://item/busy"}), 200, -32603)
    assert busy["data"] == {"code": "item_busy", "retryAfter": 1}
    assert busy["message"] == "The item is being rewritten; read it again shortly."
    invalid = error(send(key, "prompts/get", {"name": "fixture_echo",
                                              "arguments": {"topic": "nonsense"}}),
                    INVALID[era], -32602)
    assert invalid["data"] == {"code": "topic_invalid", "topic": "nonsense"}
    # A notebook the prompt names and the caller cannot see: a bad argument, no more.
    stranger_book = factories.notebook(factories.owner(), "Theirs")
    hidden = error(send(key, "prompts/get", {"name": "load_my_context", "arguments": {
        "notebookId": str(stranger_book.id)}}), INVALID[era], -32602)
    assert hidden["data"]["code"] == "notebook_not_found"


@pytest.mark.parametrize("era", ERAS)
def test_a_bug_is_a_json_rpc_error_never_the_websites_html_page(catalog, key, era):
    response = ERAS[era](key, "prompts/get", {"name": "fixture_echo",
                                             "arguments": {"topic": "explode"}})
    assert response["Content-Type"].startswith("application/json")
    failed = error(response, 200, -32603)
    assert failed == {"code": -32603, "message": "Something went wrong on our side.",
                      "data": {"code": "internal_error"}}


def test_the_places_prompts_name_are_checked_as_the_tools_check_them(catalog, owner):
    garden = factories.notebook(owner, "Garden")
    hidden = factories.notebook(owner, "Hidden")
    limited, _ = new_key(owner, all_notebooks=False, personal=False, notebooks=[garden.id])
    for prompt, extra in (("end_of_session", {}), ("save_handoff", {"taskId": "t1"}),
                          ("load_my_context", {})):
        for place, code in ((str(hidden.id), "notebook_not_found"),
                            ("personal", "personal_not_granted")):
            answer = handshake(limited, "prompts/get", {"name": prompt, "arguments": {
                **extra, "notebookId": place}})
            assert answer.json()["error"]["data"]["code"] == code, (prompt, place)
        fine = handshake(limited, "prompts/get", {"name": prompt, "arguments": {
            **extra, "notebookId": str(garden.id)}})
        assert "result" in fine.json(), (prompt, fine.json())


def test_an_empty_protocol_version_header_is_no_header(key):
    from tests.mcp.test_protocol import rpc

    answered = rpc(key, "tools/list", headers={"MCP-Protocol-Version": ""})
    assert answered.status_code == 200 and "tools" in answered.json()["result"]


def test_a_non_ascii_uri_travels_in_the_base64_name_header(catalog, key):
    read = result(modern(key, "resources/read", {"uri": UNICODE_URI}))
    assert read["contents"][0]["text"] == "Item été"


@pytest.mark.parametrize("era", ERAS)
def test_templates_and_prompts_are_declared(catalog, key, era):
    send = ERAS[era]
    templates = result(send(key, "resources/templates/list"))["resourceTemplates"]
    assert templates[0] == {"uriTemplate": "fixture://item/{n}", "name": "item",
                            "title": "An item", "description": "Item n of five.",
                            "mimeType": "text/plain"}
    assert {"note://{id}", "note://{id}@{version}", "notebook://{id}",
            "brief://{notebookId}"} <= {t["uriTemplate"] for t in templates}
    prompts = result(send(key, "prompts/list"))["prompts"]
    assert [p["name"] for p in prompts] == ["fixture_echo", "load_my_context",
                                            "save_handoff", "end_of_session"]
    assert prompts[0] == {"name": "fixture_echo", "title": "Echo a topic",
                          "description": "Repeats the topic back.", "arguments": [
                              {"name": "topic", "description": "What to talk about.",
                               "required": True},
                              {"name": "tone", "description": "How to say it.",
                               "required": False}]}


@pytest.mark.parametrize("era", ERAS)
def test_prompts_render_for_the_caller_and_check_their_arguments(catalog, owner, key, era):
    send = ERAS[era]
    got = result(send(key, "prompts/get", {"name": "fixture_echo", "arguments": {
        "topic": "moss", "tone": "warm"}}))
    assert got["description"] == "About moss"
    assert got["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Tell me about moss (warm)."}},
        {"role": "assistant", "content": {"type": "text", "text": "Gladly."}}]
    factories.note(owner, "Moss likes shade.", kind="handoff", task_id="moss-bed")
    handoff = result(send(key, "prompts/get", {"name": "save_handoff",
                                               "arguments": {"taskId": "moss-bed"}}))
    assert "Moss likes shade." in handoff["messages"][0]["content"]["text"]
    for name, arguments, complaint in (
            ("nope", {}, "Unknown prompt: nope."),
            ("fixture_echo", {}, "topic: required"),
            ("fixture_echo", {"topic": "  "}, "topic: required"),
            ("fixture_echo", {"topic": "moss", "colour": "red"}, "colour: not an argument"),
            ("fixture_echo", {"topic": 5}, "topic: must be a string"),
            ("fixture_echo", ["moss"], "must be an object"),
            ("save_handoff", {}, "taskId: required")):
        refused = error(send(key, "prompts/get", {"name": name, "arguments": arguments}),
                        INVALID[era], -32602)
        assert complaint in refused["message"], (name, arguments)
    # null is "left out", as in tool arguments
    assert result(send(key, "prompts/get", {"name": "fixture_echo", "arguments": {
        "topic": "moss", "tone": None}}))["messages"][0]["content"]["text"] == (
        "Tell me about moss (plain).")
    error(send(key, "prompts/get", {}), INVALID[era], -32602)
