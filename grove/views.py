"""Website pages of the core: one-time owner setup, login, logout, and the
`.well-known/openai-apps-challenge` answer."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib.auth import login, logout
from django.contrib.auth.views import LoginView
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from grove import selectors, services
from grove.errors import GroveError


class OwnerSetupForm(forms.Form):
    username = forms.CharField(max_length=150)
    email = forms.EmailField(required=False)
    password = forms.CharField(widget=forms.PasswordInput, min_length=8)
    password_again = forms.CharField(widget=forms.PasswordInput)

    def clean(self) -> dict:
        data = super().clean() or {}
        if data.get("password") != data.get("password_again"):
            self.add_error("password_again", "The two passwords differ.")
        return data


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
    template_name = "grove/login.html"
    redirect_authenticated_user = True

    def dispatch(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponseBase:
        if not selectors.account_exists():
            return redirect("setup")
        return super().dispatch(request, *args, **kwargs)


@require_POST
def logout_view(request: HttpRequest) -> HttpResponse:
    logout(request)
    return redirect("login")


@require_http_methods(["GET", "HEAD"])
def openai_apps_challenge(request: HttpRequest) -> HttpResponse:
    token = settings.OPENAI_APPS_CHALLENGE
    if not token:
        raise Http404()
    response = HttpResponse(token, content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response
