"""The website's import of an export file (Settings → Import)."""

from __future__ import annotations

import io

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from grove.interfaces.middleware import session_actor
from grove.kernel.errors import Invalid
from notebooks.forms import ImportForm
from notebooks.services import portability


@login_required
@require_POST
def account_import_upload(request: HttpRequest) -> HttpResponse:
    """Import an export file (NDJSON) into this account: all or nothing."""
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        raise Invalid("Choose an export file to import.", code="invalid_file")
    lines = io.TextIOWrapper(form.cleaned_data["file"].file, encoding="utf-8")
    try:
        result = portability.account_import(actor=session_actor(request),
                                             records=portability.ndjson_records(lines))
    except UnicodeDecodeError:
        raise Invalid("The file is not UTF-8 text.", code="invalid_import") from None
    messages.success(request, f"Imported {result.notebooks} notebooks, {result.notes} notes, "
                     f"{result.revisions} revisions and {result.visions} visions.")
    return redirect("settings")
