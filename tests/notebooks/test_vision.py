"""Visions (SPEC §10): edited in place with revisions, fenced by version, idempotent,
scoped by the grant — and never embedded, recalled or searched."""

from __future__ import annotations

import pytest

from grove.kernel.errors import Conflict, Forbidden, Invalid, NotFound
from grove.kernel.tenancy import tenant
from notebooks import selectors, services
from notebooks.models import Vision, VisionRevision
from notebooks.selectors.recall import recall
from notebooks.selectors.search import note_search
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner():
    return factories.owner()


def test_a_vision_is_edited_in_place_with_revisions(owner):
    garden = factories.notebook(owner, "Garden")
    assert selectors.vision_get(actor=owner, notebook_id=garden.id).version == 0
    first = services.vision_update(actor=owner, operation_id=op(), notebook_id=garden.id,
                                   content="  Feed four people.  ")
    assert (first.version, first.content, first.updated_by) == (1, "Feed four people.",
                                                                "website")
    second = services.vision_update(actor=owner, operation_id=op(), notebook_id=garden.id,
                                    content="Feed six people.", expected_version=1)
    assert second.version == 2
    assert selectors.vision_get(actor=owner, notebook_id=garden.id).content == \
        "Feed six people."
    history = selectors.vision_revisions(actor=owner, notebook_id=garden.id)
    assert [(r.version, r.content) for r in history] == [(2, "Feed six people."),
                                                         (1, "Feed four people.")]
    # The account's vision is a place of its own.
    assert selectors.vision_get(actor=owner).version == 0
    cleared = services.vision_update(actor=owner, operation_id=op(), notebook_id=garden.id,
                                     content="")
    assert (cleared.version, cleared.content) == (3, "")
    with tenant(owner):
        assert Vision.objects.count() == 1 and VisionRevision.objects.count() == 3


def test_the_same_content_again_changes_nothing(owner):
    services.vision_update(actor=owner, operation_id=op(), content="Be kind.")
    again = services.vision_update(actor=owner, operation_id=op(), content="Be kind.")
    assert again.version == 1
    assert len(selectors.vision_revisions(actor=owner)) == 1


def test_a_stale_version_is_refused_and_writes_nothing(owner):
    services.vision_update(actor=owner, operation_id=op(), content="One.")
    with pytest.raises(Conflict) as stale:
        services.vision_update(actor=owner, operation_id=op(), content="Two.",
                               expected_version=0)
    assert stale.value.code == "version_conflict"
    assert stale.value.details["current_version"] == 1
    assert selectors.vision_get(actor=owner).content == "One."
    # 0 means "there is none yet": right for a place never written.
    notebook = factories.notebook(owner, "New")
    assert services.vision_update(actor=owner, operation_id=op(), notebook_id=notebook.id,
                                  content="Fresh.", expected_version=0).version == 1


def test_operation_ids_replay_and_conflict(owner):
    operation = op()
    first = services.vision_update(actor=owner, operation_id=operation, content="Alpha.")
    services.vision_update(actor=owner, operation_id=op(), content="Beta.")
    replay = services.vision_update(actor=owner, operation_id=operation, content="Alpha.")
    assert replay == first  # the first result, not a third version
    with pytest.raises(Conflict) as clash:
        services.vision_update(actor=owner, operation_id=operation, content="Gamma.")
    assert clash.value.code == "operation_conflict"
    assert selectors.vision_get(actor=owner).content == "Beta."


def test_bad_input_is_refused_before_anything_is_written(owner):
    for content, code in (("x" * 6001, "content_too_long"), ("a\x00b", "invalid_content"),
                          (5, "invalid_content")):
        with pytest.raises(Invalid) as refused:
            services.vision_update(actor=owner, operation_id=op(), content=content)
        assert refused.value.code == code
    for version in (-1, "1", True):
        with pytest.raises(Invalid) as refused:
            services.vision_update(actor=owner, operation_id=op(), content="x",
                                   expected_version=version)
        assert refused.value.code == "invalid_version"
    assert selectors.vision_get(actor=owner).version == 0


def test_grants_decide_who_reads_and_writes_which_vision(owner):
    garden = factories.notebook(owner, "Garden")
    diary = factories.notebook(owner, "Diary")
    services.vision_update(actor=owner, operation_id=op(), notebook_id=diary.id,
                           content="Private.")
    services.vision_update(actor=owner, operation_id=op(), content="Account-wide.")
    gardener = factories.connection(owner, notebooks=[garden.id])
    # Reads: the account's (it heads every brief) and granted notebooks only.
    assert selectors.vision_get(actor=gardener).content == "Account-wide."
    for place in (diary.id, factories.notebook(factories.owner(), "Theirs").id):
        with pytest.raises(NotFound):
            selectors.vision_get(actor=gardener, notebook_id=place)
        with pytest.raises(NotFound):
            selectors.vision_revisions(actor=gardener, notebook_id=place)
        with pytest.raises(NotFound):
            services.vision_update(actor=gardener, operation_id=op(), notebook_id=place,
                                   content="Mine now.")
    # A connection limited to some notebooks cannot write what every agent reads first.
    with pytest.raises(Forbidden) as refused:
        services.vision_update(actor=gardener, operation_id=op(), content="Obey me.")
    assert refused.value.code == "account_vision_forbidden"
    saved = services.vision_update(actor=gardener, operation_id=op(), notebook_id=garden.id,
                                   content="Grow tomatoes.")
    with tenant(owner):
        from grove.models import Connection

        name = Connection.objects.get(id=gardener.connection_id).name
    assert saved.updated_by == name
    assert selectors.vision_revisions(actor=owner, notebook_id=garden.id)[0].by == name
    everything = factories.connection(owner, all_notebooks=True, personal=True)
    assert services.vision_update(actor=everything, operation_id=op(),
                                  content="Agreed.").version == 2
    reader = factories.connection(owner, capabilities=["memory:read"], all_notebooks=True,
                                  personal=True)
    with pytest.raises(Forbidden):
        services.vision_update(actor=reader, operation_id=op(), content="x")
    assert selectors.vision_get(actor=owner, notebook_id=diary.id).content == "Private."


def test_an_archived_notebook_vision_is_read_not_written(owner):
    garden = factories.notebook(owner, "Garden")
    services.vision_update(actor=owner, operation_id=op(), notebook_id=garden.id,
                           content="Before.")
    services.notebook_archive(actor=owner, notebook_id=garden.id, operation_id=op())
    assert selectors.vision_get(actor=owner, notebook_id=garden.id).content == "Before."
    with pytest.raises(Conflict) as refused:
        services.vision_update(actor=owner, operation_id=op(), notebook_id=garden.id,
                               content="After.")
    assert refused.value.code == "notebook_archived"


def test_a_vision_is_never_recalled_or_searched(owner):
    services.vision_update(actor=owner, operation_id=op(),
                           content="Zanzibar quokkas inspire everything we build.")
    garden = factories.notebook(owner, "Garden")
    services.vision_update(actor=owner, operation_id=op(), notebook_id=garden.id,
                           content="Zanzibar quokkas in the garden.")
    factories.note(owner, "An unrelated note about compost.")
    assert recall(actor=owner, query="zanzibar quokkas").data == []
    assert recall(actor=owner).meta.available == 1  # the profile: the note alone
    assert note_search(actor=owner, query="zanzibar").meta.available == 0
    with tenant(owner):
        from grove.models import Job

        assert not Job.objects.filter(kind="embed").exclude(
            target_id__in=[n.id for n in selectors.note_list(actor=owner)]).exists()


def test_vision_history_is_append_only_for_the_runtime_role(owner):
    from django.db import connection, transaction
    from django.db.utils import ProgrammingError

    services.vision_update(actor=owner, operation_id=op(), content="As written.")
    for statement in ("UPDATE notebooks_visionrevision SET content = 'rewritten'",
                      "DELETE FROM notebooks_visionrevision"):
        with tenant(owner), pytest.raises(ProgrammingError), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(statement)
    assert selectors.vision_revisions(actor=owner)[0].content == "As written."
