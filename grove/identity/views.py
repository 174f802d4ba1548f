"""Website pages of the core: one-time owner setup, login, logout, and the
`.well-known/openai-apps-challenge` answer."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, logout, update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from grove.identity import selectors, services
from grove.identity.caller import session_actor
from grove.identity.forms import (
    ApproveForm,
    GrantForm,
    NewKeyForm,
    OwnerSetupForm,
    PasswordForm,
    SecretRulesForm,
    TimeZoneForm,
)
from grove.kernel import throttle
from grove.kernel.actor import READ, WRITE, Actor
from grove.kernel.addresses import request_address
from grove.kernel.errors import GroveError, NotFound
from grove.kernel.validation import zone_names
from grove.models import Connection


@never_cache
@require_http_methods(["GET", "POST"])
def owner_setup(request: HttpRequest) -> HttpResponse:
    """Exists only while Grove has no account (SPEC §5)."""
    if selectors.account_exists():
        raise Http404("Grove is already set up.")
    form = OwnerSetupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            account = services.account_setup_owner(
                username=form.cleaned_data["username"],
                password=form.cleaned_data["password"],
                email=form.cleaned_data["email"],
            )
        except GroveError as exc:
            form.add_error(None, exc.message)
        else:
            login(request, account, backend="django.contrib.auth.backends.ModelBackend")
            return redirect("home")
    return render(request, "grove/setup.html", {"form": form}, status=400 if form.errors else 200)


class GroveLoginView(LoginView):
    """Sign-in, refused per (account name, address) and per address after repeated
    failures, and slowed — never refused — for an account failing from everywhere
    (grove/kernel/throttle.py).
    Django's `login()` rotates the session key, so a session id planted before sign-in
    is worthless after it."""

    template_name = "grove/login.html"
    redirect_authenticated_user = True

    def dispatch(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponseBase:
        if not selectors.account_exists():
            return redirect("setup")
        return super().dispatch(request, *args, **kwargs)

    def post(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        username = request.POST.get("username", "")
        wait = throttle.login_attempt(username, request_address(request))
        if wait is not None:
            # Refused before the password is even checked (no hashing work, no oracle);
            # counted before it, so simultaneous guesses cannot all get through.
            minutes = max(1, round(wait / 60))
            form = self.get_form_class()(request, initial={"username": username})
            response = self.render_to_response(self.get_context_data(
                form=form, throttled=f"Too many failed sign-in attempts. Try again in "
                                     f"{minutes} minute{'s' if minutes > 1 else ''}."))
            response.status_code = 429
            response["Retry-After"] = str(wait)
            return response
        delay = throttle.login_slowdown(username)
        if delay:
            time.sleep(delay)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        throttle.login_attempt_failed(self.request.POST.get("username", ""))
        response = super().form_invalid(form)
        response.status_code = 400
        return response

    def form_valid(self, form: AuthenticationForm) -> HttpResponse:
        throttle.login_succeeded(self.request.POST.get("username", ""),
                                 request_address(self.request))
        return super().form_valid(form)


@require_POST
def logout_view(request: HttpRequest) -> HttpResponse:
    logout(request)
    return redirect("login")


def password_reentry_refused(request: HttpRequest, template: str,
                             context: dict[str, Any]) -> HttpResponse | None:
    """The 429 page while the signed-in owner's wrong passwords (changing it, deleting
    the account) are over the sign-in budget — a browser left signed in is no way to
    guess the password faster; None when the attempt may go on."""
    wait = throttle.login_blocked_for(request.user.get_username(),
                                      request_address(request))
    if wait is None:
        return None
    minutes = max(1, round(wait / 60))
    response = render(request, template, {
        **context, "throttled": f"Too many wrong passwords. Try again in {minutes} "
                               f"minute{'s' if minutes > 1 else ''}."}, status=429)
    response["Retry-After"] = str(wait)
    return response


def password_reentry_failed(request: HttpRequest) -> None:
    throttle.login_failed(request.user.get_username(), request_address(request))


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def password_change(request: HttpRequest) -> HttpResponse:
    """Change the owner's password; this browser stays signed in, every other session
    ends. Wrong current passwords count against the same budget as failed sign-ins: a
    browser left signed in is no way to guess the password faster."""
    form = PasswordForm(request.POST if request.method == "POST" else None)
    if request.method == "POST":
        refused = password_reentry_refused(request, "grove/password.html",
                                           {"form": PasswordForm()})
        if refused is not None:
            return refused
    if request.method == "POST" and form.is_valid():
        try:
            account = services.account_change_password(
                actor=session_actor(request), current=form.cleaned_data["current"],
                new=form.cleaned_data["new"])
        except GroveError as exc:
            if exc.code == "wrong_password":
                password_reentry_failed(request)
            form.add_error("current" if exc.code == "wrong_password" else "new", exc.message)
        else:
            update_session_auth_hash(request, account)
            messages.success(request, "Password changed. Other signed-in browsers are "
                                      "signed out.")
            return redirect("settings")
    status = 400 if request.method == "POST" else 200
    return render(request, "grove/password.html", {"form": form}, status=status)


@require_http_methods(["GET", "HEAD"])
def openai_apps_challenge(request: HttpRequest) -> HttpResponse:
    token = settings.OPENAI_APPS_CHALLENGE
    if not token:
        raise Http404()
    response = HttpResponse(token, content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


# -- connections (API keys) ------------------------------------------------------------------


def _grant(data: dict[str, Any]) -> dict[str, Any]:
    """The services' capability and grant keywords from a key, approve or grant form."""
    return {"capabilities": [READ, WRITE] if data["can_write"] else [READ],
            "personal": data["personal"], "all_notebooks": data["scope"] == "all",
            "notebooks": data["notebooks"] if data["scope"] == "some" else []}


def _connections_page(request: HttpRequest, *, form: NewKeyForm | None = None,
                      new_key: str | None = None, status: int = 200) -> HttpResponse:
    overview = selectors.connection_overview(actor=session_actor(request))
    if form is not None and form.is_bound:  # a refused post, shown with the choices
        shown = NewKeyForm(form.data, notebooks=overview.notebooks)
        shown.is_valid()
        for error in form.non_field_errors():
            shown.add_error(None, error)
        form = shown
    names = {choice.id: choice.name for choice in overview.notebooks}
    connections = [
        (c, [names.get(str(n), "(deleted notebook)") for n in c.grant.notebooks])
        for c in overview.connections
    ]
    response = render(request, "grove/connections.html", {
        "section": "connections",
        "connections": connections, "form": form or NewKeyForm(notebooks=overview.notebooks),
        "new_key": new_key,
    }, status=status)
    if new_key:
        response["Cache-Control"] = "no-store"  # the page holds a secret shown once
    return response


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def connections(request: HttpRequest) -> HttpResponse:
    """API keys and every other connection. Creating a key shows its secret once, on
    the response to the POST itself (it is never stored, so there is nothing to redirect
    to)."""
    if request.method == "GET":
        return _connections_page(request)
    actor = session_actor(request)
    form = NewKeyForm(request.POST, notebooks=None)  # the service checks the notebooks
    if form.is_valid():
        data = form.cleaned_data
        try:
            created = services.connection_create_key(actor=actor, name=data["name"],
                                                     operation_id=data["operation_id"],
                                                     **_grant(data))
        except GroveError as exc:
            form.add_error(None, exc.message)
        else:
            return _connections_page(request, new_key=created.key)
    return _connections_page(request, form=form, status=400)


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def connection_approve(request: HttpRequest, connection_id: str) -> HttpResponse:
    """The owner approves — or denies — an OAuth client that asked through an approval
    link: capabilities and grant, as for an API key, starting from read only. A post goes
    straight to its service; the page is read only to show it (again)."""
    actor = session_actor(request)
    asked = request.GET.get("request") or request.POST.get("request") or ""
    if request.method == "POST" and request.POST.get("decision") == "deny":
        return _deny(request, actor, connection_id, asked)
    problem: str | None = None
    if request.method == "POST":
        posted = ApproveForm(request.POST, notebooks=None)
        if posted.is_valid():
            data = posted.cleaned_data
            try:
                connection, approved = services.connection_approve(
                    actor=actor, connection_id=connection_id, request_id=data["request"],
                    **_grant(data))
            except NotFound as exc:
                if exc.code != "notebook_not_found":
                    raise
                problem = exc.message  # a notebook gone since the page was loaded
            else:
                if approved:
                    messages.success(request, f"Approved {connection.name}. It can use Grove "
                                              "now.")
                else:  # approved already (another tab)
                    messages.info(request, f"{connection.name} was approved already; nothing "
                                           "changed. Use Change to alter what it may do.")
                return redirect("connections")
    review = selectors.connection_approval(actor=actor, connection_id=connection_id,
                                           request_id=asked)
    if request.method == "POST":  # refused: shown again, with the choices
        form = ApproveForm(request.POST, notebooks=review.notebooks)
        form.is_valid()
        if problem:
            form.add_error(None, problem)
    else:
        form = ApproveForm(notebooks=review.notebooks,
                           initial={"request": request.GET.get("request")})
    return render(request, "grove/approve.html", {
        "section": "connections", "connection": review.connection, "form": form,
        "fresh": review.fresh, "pending": review.pending},
        status=400 if request.method == "POST" else 200)


def _shown_on_the_form(error: GroveError) -> bool:
    """What the grant form shows in place: any refusal but a connection that is not
    there (that is the 404 page), a notebook gone since the page was loaded included."""
    return not isinstance(error, NotFound) or error.code == "notebook_not_found"


def _deny(request: HttpRequest, actor: Actor, connection_id: str, asked: str) -> HttpResponse:
    connection, denied = services.connection_deny(actor=actor, connection_id=connection_id,
                                                  request_id=asked)
    if denied:
        messages.success(request, f"Denied {connection.name}. It cannot reach your notes; if "
                                  "it signs in again it has to ask anew.")
    else:
        messages.info(request, f"Nothing changed: this request of {connection.name} is no "
                               "longer open. Revoke it on this page if you want it gone.")
    return redirect("connections")


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def connection_edit(request: HttpRequest, connection_id: str) -> HttpResponse:
    """Change what a connection may do and see (SPEC §5: `expectedState` fences it)."""
    actor = session_actor(request)
    if request.method == "POST":
        form = GrantForm(request.POST, notebooks=None)
        if form.is_valid():
            data = form.cleaned_data
            try:
                services.connection_update(actor=actor, connection_id=connection_id,
                                           expected_state=data["expected_state"],
                                           name=data["name"], refuse_pending=True,
                                           home_notebook=data["home"] or None,
                                           **_grant(data))
            except GroveError as exc:
                if exc.code == "connection_pending":  # approving is how it gets a grant
                    messages.info(request, exc.message)
                    return redirect("connections")
                if not _shown_on_the_form(exc):
                    raise
                problem: GroveError | None = exc
            else:
                messages.success(request, f"Saved what {data['name']} may do.")
                return redirect("connections")
        else:
            problem = None
    page = selectors.connection_editing(actor=actor, connection_id=connection_id)
    current = page.connection
    if current.status == Connection.Status.PENDING:  # approving is how it gets a grant
        messages.info(request, f"{current.name} waits for your approval: review its "
                               "request to choose what it may do.")
        return redirect("connections")
    if request.method != "POST":
        form = GrantForm.of(current, page.notebooks)
        return render(request, "grove/connection_edit.html", {
            "section": "connections", "connection": current, "form": form})
    if problem is not None and problem.code == "connection_conflict":  # show what it is now
        form = GrantForm.of(current, page.notebooks, bound=True)
    else:
        form = GrantForm(request.POST, notebooks=page.notebooks)
    form.is_valid()
    if problem is not None:
        form.add_error(None, problem.message)
    return render(request, "grove/connection_edit.html", {
        "section": "connections", "connection": current, "form": form}, status=400)


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def connection_revoke(request: HttpRequest, connection_id: str) -> HttpResponse:
    """Asks first (GET: what revoking means), then revokes for good (POST)."""
    actor = session_actor(request)
    if request.method == "GET":
        return render(request, "grove/connection_revoke.html", {
            "section": "connections",
            "connection": selectors.connection_get(actor=actor, connection_id=connection_id)})
    revoked = services.connection_revoke(actor=actor, connection_id=connection_id)
    messages.success(request, f"Revoked {revoked.name}.")
    return redirect("connections")


# -- settings ----------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def account_settings(request: HttpRequest) -> HttpResponse:
    """Automatic-capture pause, provider status, export and import (SPEC §11), and what
    feature apps add (notebooks: the account's vision)."""
    actor = session_actor(request)
    if request.method == "POST":
        paused = request.POST.get("capture") == "paused"
        services.account_set_capture_paused(actor=actor, paused=paused)
        messages.success(request, "Automatic capture paused." if paused
                         else "Automatic capture resumed.")
        return redirect("settings")
    return settings_page(request)


@login_required
@require_POST
def account_time_zone(request: HttpRequest) -> HttpResponse:
    """Set the zone every page shows times in; an unknown name is shown back with why
    (400), and nothing changes."""
    form = TimeZoneForm(request.POST)
    if form.is_valid():
        try:
            saved = services.account_set_time_zone(actor=session_actor(request),
                                                   time_zone=form.cleaned_data["time_zone"])
        except GroveError as exc:
            form.add_error("time_zone", exc.message)
        else:
            messages.success(request, f"Times are now shown in {saved.time_zone}.")
            return redirect(reverse("settings") + "#time-zone")
    return settings_page(request, shown={"time_zone_form": form}, status=400)


@login_required
@require_POST
def account_secret_rules(request: HttpRequest) -> HttpResponse:
    """Settings → Credentials; a bad pattern is shown back with why (400), and nothing
    changes."""
    form = SecretRulesForm(request.POST)
    if form.is_valid():
        try:
            services.account_set_secret_rules(
                actor=session_actor(request), on_ingest=form.cleaned_data["on_ingest"],
                on_automatic=form.cleaned_data["on_automatic"],
                on_explicit=form.cleaned_data["on_explicit"],
                patterns=form.cleaned_data["patterns"])
        except GroveError as exc:
            form.add_error("patterns", exc.message)
        else:
            messages.success(request, "Credential rules saved; they apply to the saves "
                                      "from now on.")
            return redirect(reverse("settings") + "#credentials")
    return settings_page(request, shown={"secret_form": form}, status=400)


def settings_page(request: HttpRequest, *, shown: dict[str, Any] | None = None,
                  status: int = 200) -> HttpResponse:
    """The Settings page, read in one call (`account_settings_page`). `shown`: what a
    feature app's refused post shows again in its card (the account vision's draft and
    why it was not saved) — that app's view renders the page with it."""
    from grove.embeddings import configured_profile

    page = selectors.account_settings_page(actor=session_actor(request))
    profile = configured_profile()
    return render(request, "grove/settings.html", {
        **page.extras,
        "section": "settings",
        "account": page.settings,
        "embeddings": {"provider": settings.GROVE_EMBEDDINGS, "profile": profile},
        "generation": {"base_url": settings.GROVE_LLM_BASE_URL,
                       "model": settings.GROVE_LLM_MODEL,
                       "timeout": settings.GROVE_LLM_TIMEOUT,
                       "per_connection": settings.GROVE_MODEL_CALLS_PER_CONNECTION,
                       "per_account": settings.GROVE_MODEL_CALLS_PER_ACCOUNT},
        "time_zone_form": TimeZoneForm(initial={"time_zone": page.settings.time_zone}),
        "time_zones": sorted(zone_names()),
        "secret_form": SecretRulesForm(initial={
            "on_ingest": page.settings.secrets_on_ingest,
            "on_automatic": page.settings.secrets_on_automatic,
            "on_explicit": page.settings.secrets_on_explicit,
            "patterns": SecretRulesForm.shown(page.settings.secret_patterns)}),
        **(shown or {}),
    }, status=status)
