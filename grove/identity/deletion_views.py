"""Settings → Delete account (`grove.identity.deletion`): the final export first, then
the password again; afterwards this browser is signed out and told what happened."""

from __future__ import annotations

from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from grove.identity.caller import session_actor
from grove.identity.deletion import account_delete
from grove.identity.forms import DeleteAccountForm
from grove.identity.views import password_reentry_failed, password_reentry_refused
from grove.kernel.errors import GroveError


@login_required
@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def account_delete_page(request: HttpRequest) -> HttpResponse:
    """Wrong passwords count against the sign-in budget, as on the password page."""
    form = DeleteAccountForm(request.POST if request.method == "POST" else None)
    context: dict[str, object] = {"form": form}
    if request.method == "POST":
        refused = password_reentry_refused(request, "grove/delete_account.html",
                                           {"form": DeleteAccountForm()})
        if refused is not None:
            return refused
        if form.is_valid():
            try:
                deleted = account_delete(actor=session_actor(request),
                                         password=form.cleaned_data["password"])
            except GroveError as exc:
                if exc.code == "wrong_password":
                    password_reentry_failed(request)
                form.add_error("password", exc.message)
            else:
                logout(request)
                return render(request, "grove/account_deleted.html", {"deleted": deleted})
        return render(request, "grove/delete_account.html", context, status=400)
    return render(request, "grove/delete_account.html", context)
