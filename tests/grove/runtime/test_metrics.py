"""`/metrics` (issue 23 item 4; grove/interfaces/metrics.py, grove/kernel/metrics.py,
grove/kernel/job_metrics.py): hidden without a token, 401 without the right one, 429 for the
wrong tokens of an address that keeps guessing (never for the right one), and what it
reports moves with real requests, real jobs and real refusals."""

from __future__ import annotations

import runpy
import uuid
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from django.test import Client, override_settings
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

import grove.settings
from grove.kernel import job_metrics, jobs
from grove.models import Job
from notebooks import services
from notebooks.services.indexing import EMBED
from tests import factories
from tests.api.conftest import Caller, new_key

TOKEN = "scrape-token-0123456789abcdef0123456789"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture
def token(settings):
    settings.GROVE_METRICS_TOKEN = TOKEN
    return TOKEN


def scrape(client: Client | None = None) -> Samples:
    response = (client or Client()).get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.content[:300]
    return parse(response.content.decode())


def parse(text: str) -> Samples:
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def requests_of(samples: Samples, route: str, method: str = "GET", status: str = "2xx") -> float:
    return value(samples, "grove_http_request_duration_seconds_count", method=method,
                 route=route, status=status)


# -- the endpoint ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_without_a_token_setting_it_is_the_404_of_any_unknown_address(settings):
    settings.GROVE_METRICS_TOKEN = None
    unknown = Client().get("/no-such-address")
    for method in ("get", "post"):
        hidden = getattr(Client(), method)("/metrics", headers={
            "Authorization": f"Bearer {TOKEN}"})
        assert hidden.status_code == unknown.status_code == 404
        assert [t.name for t in hidden.templates] == [t.name for t in unknown.templates]


@pytest.mark.django_db
def test_a_missing_or_wrong_token_is_401_with_a_bearer_challenge(token):
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789abcdef"},
                    {"Authorization": f"Basic {TOKEN}"},
                    {"Authorization": f"Bearer {TOKEN}x"}, {"Authorization": "Bearer"}):
        answer = Client().get("/metrics", headers=headers)
        assert answer.status_code == 401, headers
        assert answer["WWW-Authenticate"] == "Bearer"
        assert b"grove_" not in answer.content


@pytest.mark.django_db
def test_the_token_opens_the_exposition_in_the_format_asked_for(token):
    answer = Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/plain; version=0.0.4")
    assert answer["Cache-Control"] == "no-store"
    names = {family.name for family in text_string_to_metric_families(answer.content.decode())}
    assert {"grove_http_request_duration_seconds", "grove_recall_arm_duration_seconds",
            "grove_rate_limit_refusals", "grove_jobs_queued",
            "grove_job_oldest_queued_age_seconds", "grove_jobs_running", "grove_jobs_done",
            "grove_jobs_failed", "grove_jobs_read_ok", "process_cpu_seconds"} <= names
    assert value(parse(answer.content.decode()), "grove_jobs_read_ok") == 1
    open_metrics = Client().get("/metrics", headers={
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"})
    assert open_metrics["Content-Type"].startswith("application/openmetrics-text")
    assert open_metrics.content.endswith(b"# EOF\n")


@pytest.mark.django_db
def test_exempt_from_the_https_redirect_like_the_health_checks(monkeypatch):
    monkeypatch.setenv("GROVE_BASE_URL", "https://notes.example.org")
    # The settings an https base URL makes (grove/settings.py run afresh).
    production = runpy.run_path(str(Path(grove.settings.__file__)))
    assert production["SECURE_SSL_REDIRECT"] is True
    with override_settings(SECURE_SSL_REDIRECT=True,
                           SECURE_REDIRECT_EXEMPT=production["SECURE_REDIRECT_EXEMPT"]):
        assert Client().get("/metrics").status_code == 404  # not a redirect
        assert Client().get("/login/").status_code == 301


def test_the_token_setting_is_checked_at_start(tmp_path, monkeypatch):
    from grove.runtime import config

    for name in config.SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GROVE_HOME", str(tmp_path / "home"))
    assert config.load().metrics_token is None
    for bad in ("short-token", "t" * 31, "a token with spaces in it, 32 characters",
                "tøken-0123456789abcdef0123456789abcdef"):
        monkeypatch.setenv("GROVE_METRICS_TOKEN", bad)
        with pytest.raises(config.ConfigError, match=r"^GROVE_METRICS_TOKEN: must be at "
                                                     r"least 32 characters"):
            config.load()
    monkeypatch.delenv("GROVE_METRICS_TOKEN")
    (tmp_path / "home" / "grove.toml").write_text(f'metrics_token = "{TOKEN}"\n')
    assert config.load().metrics_token == TOKEN


@pytest.mark.django_db
def test_wrong_tokens_are_limited_and_the_right_one_is_never_refused(token, monkeypatch):
    """Issue 36 item 2.5: 30 wrong tokens from an address used to refuse the right one
    from it too — Prometheus behind the same NAT or proxy as a guesser was locked out."""
    from grove.interfaces.metrics import FAILED_ATTEMPTS
    from grove.kernel import throttle

    now = [7_000_010.0]  # 50 s into a minute: the window ends in 10 s
    monkeypatch.setattr(throttle, "clock", lambda: now[0])
    right = {"Authorization": f"Bearer {TOKEN}"}
    wrong = {"Authorization": f"Bearer {'x' * len(TOKEN)}"}
    prometheus, guesser = Client(REMOTE_ADDR="10.0.0.2"), Client(REMOTE_ADDR="203.0.113.9")

    def refusals() -> float:
        return value(scrape(prometheus), "grove_rate_limit_refusals_total", scope="metrics")

    before = refusals()
    for _ in range(FAILED_ATTEMPTS + 10):  # scrapes are never counted, however many
        assert prometheus.get("/metrics", headers=right).status_code == 200
    answers = [guesser.get("/metrics", headers=wrong) for _ in range(FAILED_ATTEMPTS + 2)]
    assert [a.status_code for a in answers] == [401] * FAILED_ATTEMPTS + [429, 429]
    assert answers[-1]["Retry-After"] == "10"
    # The right token from the guessing address: answered, at once and every time.
    for _ in range(3):
        found = guesser.get("/metrics", headers=right)
        assert found.status_code == 200 and b"grove_" in found.content
    # ...while wrong ones from it stay limited, the right one not counted among them.
    still = guesser.get("/metrics", headers=wrong)
    assert still.status_code == 429 and still["Retry-After"] == "10"
    assert guesser.get("/metrics").status_code == 429  # no token at all is a wrong one
    assert refusals() - before == 4
    now[0] += 10  # the next minute
    assert guesser.get("/metrics", headers=wrong).status_code == 401


# -- request latency by route ---------------------------------------------------------------


@pytest.mark.django_db
def test_requests_are_counted_by_their_route_pattern_never_their_path(token):
    owner = factories.owner()
    key, _ = new_key(owner)
    notes = [factories.note(owner, f"Note {n} about the garden.") for n in range(2)]
    api = Caller(Client(), key)
    before = scrape()
    for note in notes:
        assert api.get(f"/notes/{note.id}").status_code == 200
    missing = uuid.uuid4()
    assert api.get(f"/notes/{missing}").status_code == 404
    assert Client().get(f"/nothing-here-{missing}").status_code == 404
    text = Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).content.decode()
    after = parse(text)
    assert requests_of(after, "v1/notes/<note_id>") - requests_of(
        before, "v1/notes/<note_id>") == 2
    assert requests_of(after, "v1/notes/<note_id>", status="4xx") - requests_of(
        before, "v1/notes/<note_id>", status="4xx") == 1
    assert requests_of(after, "unmatched", status="4xx") - requests_of(
        before, "unmatched", status="4xx") == 1
    assert requests_of(after, "metrics") - requests_of(before, "metrics") == 1
    for note_id in (*(note.id for note in notes), missing):
        assert str(note_id) not in text
    # A method no standard names cannot make a label of its own either.
    Client().generic("BREW", "/healthz")
    assert value(scrape(), "grove_http_request_duration_seconds_count", method="other",
                 route="healthz", status="2xx") >= 1


# -- jobs, read from the job table -----------------------------------------------------------


class Broken:
    """An embedder that fails with an error jobs do not retry."""

    dimension = 384
    profile = "broken/384"

    def embed(self, texts):
        raise ValueError("broken model")


@pytest.fixture
def actor(celery_worker_on, tmp_path):
    # Follow-up wake-ups ask a broker whether one already waits: an empty one of the test's.
    folder = tmp_path / "broker"
    celery_worker_on.use_broker("grovefs://", {
        "data_folder_in": str(folder / "queue"), "data_folder_out": str(folder / "queue"),
        "processed_folder": str(folder / "processed"),
        "control_folder": str(folder / "control"), "store_processed": False})
    return factories.owner()


@pytest.mark.django_db
def test_queue_depth_age_and_running_jobs_by_kind(token, actor):
    factories.note(actor, "A note that waits for its vector.")
    factories.note(actor, "Another one.")
    samples = scrape()
    assert value(samples, "grove_jobs_queued", kind=EMBED) == 2
    assert value(samples, "grove_jobs_running", kind=EMBED) == 0
    assert value(samples, "grove_job_oldest_queued_age_seconds", kind=EMBED) < 60
    with factories.tenant(actor):  # the oldest has been ready for two minutes
        oldest = Job.objects.filter(kind=EMBED).order_by("created_at").first()
        Job.objects.filter(id=oldest.id).update(
            run_after=timezone.now() - timedelta(seconds=120))
    assert 120 <= value(scrape(), "grove_job_oldest_queued_age_seconds", kind=EMBED) < 180
    jobs.claim(account_id=actor.account_id, kind=EMBED, limit=1)
    samples = scrape()
    assert value(samples, "grove_jobs_queued", kind=EMBED) == 1
    assert value(samples, "grove_jobs_running", kind=EMBED) == 1
    # Another account's queue adds to the same installation-wide numbers.
    factories.note(factories.owner(), "Someone else's note.")
    assert value(scrape(), "grove_jobs_queued", kind=EMBED) == 2


@pytest.mark.django_db
def test_done_and_failed_jobs_are_counted_once_each(token, actor, monkeypatch):
    monkeypatch.setattr(job_metrics, "SETTLE", timedelta(0))
    notes = [factories.note(actor, f"Note {n} to embed.") for n in range(3)]
    before = scrape()
    # An edit supersedes the note's queued job: discarded, neither done nor failed.
    services.note_update(actor=actor, operation_id=factories.op(), note_id=notes[0].id,
                         content="Note 0, edited before it was embedded.")
    assert jobs.run_batch(account_id=actor.account_id, kind=EMBED) == 3
    after = scrape()
    assert value(after, "grove_jobs_done_total", kind=EMBED) - value(
        before, "grove_jobs_done_total", kind=EMBED) == 3
    assert value(after, "grove_jobs_failed_total", kind=EMBED) == value(
        before, "grove_jobs_failed_total", kind=EMBED)
    assert value(after, "grove_jobs_queued", kind=EMBED) == 0
    assert value(scrape(), "grove_jobs_done_total", kind=EMBED) == value(
        after, "grove_jobs_done_total", kind=EMBED)  # counted once, not at every scrape
    monkeypatch.setattr("notebooks.services.indexing.get_embedder", lambda: Broken())
    factories.note(actor, "This one will not embed.")
    jobs.run_batch(account_id=actor.account_id, kind=EMBED)
    failed = scrape()
    assert value(failed, "grove_jobs_failed_total", kind=EMBED) - value(
        after, "grove_jobs_failed_total", kind=EMBED) == 1
    assert value(failed, "grove_jobs_done_total", kind=EMBED) == value(
        after, "grove_jobs_done_total", kind=EMBED)


@pytest.mark.django_db
def test_jobs_finished_within_the_settling_time_wait_for_a_later_scrape(token, actor):
    factories.note(actor, "Embedded just now.")
    before = scrape()
    jobs.run_batch(account_id=actor.account_id, kind=EMBED)
    now = scrape()
    assert value(now, "grove_jobs_done_total", kind=EMBED) == value(
        before, "grove_jobs_done_total", kind=EMBED)  # finished less than SETTLE ago


@pytest.mark.django_db
def test_a_database_that_does_not_answer_leaves_the_job_families_out(token, monkeypatch):
    from django.db import OperationalError

    def down():
        raise OperationalError("canceling statement due to statement timeout")

    monkeypatch.setattr(job_metrics, "active_account_ids", down)
    samples = scrape()
    assert value(samples, "grove_jobs_read_ok") == 0
    assert not any(name.startswith("grove_jobs_queued") for name, _ in samples)
    assert any(name == "grove_http_request_duration_seconds_count" for name, _ in samples)


# -- rate-limit refusals ---------------------------------------------------------------------


@pytest.mark.django_db
def test_every_429_of_a_connection_limit_is_counted(token, settings, monkeypatch):
    from grove.kernel import throttle

    monkeypatch.setattr(throttle, "clock", lambda: 7_000_010.0)  # one window throughout
    settings.GROVE_API_RATE_LIMIT = 2
    key, _ = new_key(factories.owner())
    api = Caller(Client(), key)
    before = value(scrape(), "grove_rate_limit_refusals_total", scope="connection")
    statuses = [api.get("/notebooks").status_code for _ in range(4)]
    assert statuses == [200, 200, 429, 429]
    after = value(scrape(), "grove_rate_limit_refusals_total", scope="connection")
    assert after - before == 2


def test_refusals_before_django_are_counted_and_scrapes_are_never_refused(
        site_url, committed, settings, monkeypatch):
    from grove.interfaces import limits
    from grove.kernel import throttle

    monkeypatch.setattr(throttle, "clock", lambda: 7_000_010.0)
    monkeypatch.setattr(limits, "REFUSAL_DELAY", 0)
    settings.GROVE_METRICS_TOKEN = TOKEN
    settings.GROVE_ADDRESS_RATE_LIMIT = 3
    with httpx.Client(base_url=site_url, timeout=30) as client:
        def metrics_now() -> Samples:
            answer = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
            assert answer.status_code == 200  # however far over the limit the address is
            return parse(answer.text)

        before = metrics_now()
        statuses = [client.get("/login/").status_code for _ in range(5)]
        assert statuses[-2:] == [429, 429]
        after = metrics_now()
    assert value(after, "grove_rate_limit_refusals_total", scope="address") - value(
        before, "grove_rate_limit_refusals_total", scope="address") == 2
    assert requests_of(after, "refused", status="4xx") - requests_of(
        before, "refused", status="4xx") == 2
