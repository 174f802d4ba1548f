"""The account's time zone (Settings): the service keeps only names the zone database
knows, and every absolute time a signed-in owner's page shows is in that zone — while
the API, which gives instants with their offset, stays as it was."""

from __future__ import annotations

import re
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from django.test import Client

from grove.identity import selectors, services
from grove.kernel.errors import Forbidden, Invalid
from grove.models import Account
from tests import factories

pytestmark = pytest.mark.django_db

KOLKATA = ZoneInfo("Asia/Kolkata")  # +05:30 all year: no daylight saving to trip on


def zone_of(actor) -> str:
    return Account.objects.get(id=actor.account_id).time_zone


def signed_in(actor) -> Client:
    client = Client()
    client.force_login(Account.objects.get(id=actor.account_id))
    return client


def shown(moment: datetime, zone: ZoneInfo) -> str:
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M ") + moment.astimezone(
        zone).tzname()


# -- the service ---------------------------------------------------------------------------------


def test_a_new_account_shows_utc():
    owner = factories.owner()
    assert zone_of(owner) == "UTC"
    assert selectors.account_settings(actor=owner).time_zone == "UTC"


def test_a_known_zone_is_saved_trimmed():
    owner = factories.owner()
    saved = services.account_set_time_zone(actor=owner, time_zone="  Europe/Paris ")
    assert saved.time_zone == "Europe/Paris" and zone_of(owner) == "Europe/Paris"
    services.account_set_time_zone(actor=owner, time_zone="UTC")
    assert zone_of(owner) == "UTC"


@pytest.mark.parametrize("name", [
    "Mars/Olympus_Mons", "", "   ", "europe/paris", "../../etc/passwd", "/etc/localtime",
    "localtime", "Factory", "Europe/Paris\x00", "x" * 10_000, None, 42,
])
def test_an_unknown_zone_is_refused_and_changes_nothing(name):
    owner = factories.owner()
    services.account_set_time_zone(actor=owner, time_zone="Asia/Tokyo")
    with pytest.raises(Invalid) as refused:
        services.account_set_time_zone(actor=owner, time_zone=name)
    assert refused.value.code == "invalid_time_zone"
    assert "IANA" in refused.value.message and len(refused.value.message) < 200
    assert zone_of(owner) == "Asia/Tokyo"


def test_only_the_owner_session_sets_it():
    owner = factories.owner()
    key = factories.connection(owner, all_notebooks=True)
    with pytest.raises(Forbidden):
        services.account_set_time_zone(actor=key, time_zone="Asia/Tokyo")
    assert zone_of(owner) == "UTC"


# -- the Settings page ---------------------------------------------------------------------------


def test_settings_page_saves_a_zone_and_says_so():
    owner = factories.owner()
    web = signed_in(owner)
    page = web.get("/settings/").content.decode()
    assert 'id="time-zone"' in page and 'data-time-zone="UTC"' in page
    assert '<option value="Europe/Paris">' in page  # the datalist of every zone
    assert 'data-browser-zone-for="id_time_zone" hidden' in page  # shown by grove.js
    saved = web.post("/settings/time-zone/", {"time_zone": "Asia/Kolkata"})
    assert saved.status_code == 302 and saved.url == "/settings/#time-zone"
    again = web.get("/settings/").content.decode()
    assert "Times are now shown in Asia/Kolkata." in again
    assert 'data-time-zone="Asia/Kolkata"' in again and "IST there" in again


@pytest.mark.parametrize("posted", [{"time_zone": "Atlantis/Capital"}, {"time_zone": ""}, {},
                                    {"time_zone": "Europe/" + "x" * 500}])
def test_settings_page_shows_a_bad_zone_back_and_changes_nothing(posted):
    owner = factories.owner()
    web = signed_in(owner)
    response = web.post("/settings/time-zone/", posted)
    body = response.content.decode()
    assert response.status_code == 400 and 'class="errorlist' in body
    assert "<h1>Settings</h1>" in body and 'data-time-zone="UTC"' in body
    if posted.get("time_zone") == "Atlantis/Capital":
        assert "“Atlantis/Capital” is not a time zone" in body
        assert 'value="Atlantis/Capital"' in body  # kept in the field, to correct
    assert zone_of(owner) == "UTC"
    assert web.get("/settings/time-zone/").status_code == 405


def test_the_zone_is_the_accounts_own():
    owner, other = factories.owner(), factories.owner()
    signed_in(owner).post("/settings/time-zone/", {"time_zone": "Asia/Kolkata"})
    assert (zone_of(owner), zone_of(other)) == ("Asia/Kolkata", "UTC")


# -- what pages show -----------------------------------------------------------------------------


def test_note_page_times_follow_the_zone():
    owner = factories.owner()
    note = factories.note(owner, "Water the ferns.")
    web = signed_in(owner)
    utc = web.get(f"/notes/{note.id}/").content.decode()
    assert shown(note.created_at, ZoneInfo("UTC")) in utc  # "… 14:05 UTC", as before
    assert shown(note.updated_at, ZoneInfo("UTC")) in utc
    services.account_set_time_zone(actor=owner, time_zone="Asia/Kolkata")
    local = web.get(f"/notes/{note.id}/").content.decode()
    assert shown(note.updated_at, KOLKATA) in local  # the Updated line
    assert shown(note.created_at, KOLKATA) in local  # Created, and the v1 revision
    assert re.search(r'<time datetime="[^"]+\+05:30">', local)
    assert " UTC" not in local.split("<main", 1)[1].split("</main>", 1)[0]


def test_activity_days_start_at_the_owners_midnight():
    owner = factories.owner()
    factories.note(owner, "Repot the basil.")
    services.account_set_time_zone(actor=owner, time_zone="Asia/Kolkata")
    page = signed_in(owner).get("/activity/", {"since": "today"}).content.decode()
    today = datetime.now(KOLKATA).date()
    assert f"since {today:%Y-%m-%d} 00:00 Asia/Kolkata" in page
    assert '<abbr title="Asia/Kolkata">IST</abbr>' in page


def test_the_api_does_not_follow_the_zone():
    """JSON gives instants with their offset, the same whoever asks."""
    owner = factories.owner()
    factories.note(owner, "Sharpen the shears.")
    services.account_set_time_zone(actor=owner, time_zone="Asia/Kolkata")
    web = signed_in(owner)
    settings = web.get("/v1/account/settings").json()["data"]
    assert settings["timeZone"] == "Asia/Kolkata"
    export = b"".join(web.get("/v1/export").streaming_content).decode()
    stamps = re.findall(r'"(?:createdAt|updatedAt)": ?"([^"]+)"', export)
    assert stamps and all(s.endswith(("Z", "+00:00")) for s in stamps), stamps


def test_a_zone_the_database_no_longer_knows_shows_utc():
    """After an upgrade of the zone database a stored name may be gone: pages fall back
    to UTC instead of failing."""
    owner = factories.owner()
    note = factories.note(owner, "Mulch the roses.")
    Account.objects.filter(id=owner.account_id).update(time_zone="Gone/Away")
    page = signed_in(owner).get(f"/notes/{note.id}/")
    assert page.status_code == 200
    assert shown(note.updated_at, ZoneInfo("UTC")) in page.content.decode()
