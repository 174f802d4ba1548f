"""Settings → Move this account: download the lossless archive, import one
(`grove.identity.archive`)."""

from __future__ import annotations

import io
import json
import tempfile
from typing import IO, cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from grove.identity.archive import account_archive, account_archive_import, archive_records
from grove.identity.caller import session_actor
from grove.kernel.errors import GroveError


@login_required
@require_GET
def account_archive_download(request: HttpRequest) -> FileResponse:
    """The lossless account archive (`grove.identity.archive`), written to a temporary
    file that spills to disk past 16 MB, then sent."""
    spool = tempfile.SpooledTemporaryFile(max_size=16 * 1024 * 1024)  # noqa: SIM115
    for record in account_archive(actor=session_actor(request)):
        spool.write(json.dumps(record, separators=(",", ":")).encode() + b"\n")
    spool.seek(0)
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return FileResponse(spool, as_attachment=True, content_type="application/x-ndjson",
                        filename=f"grove-archive-{stamp}.ndjson")


@login_required
@require_POST
def account_archive_upload(request: HttpRequest) -> HttpResponse:
    """Load an archive into this (empty) account: all or nothing; why not, if not."""
    upload = request.FILES.get("file")
    if upload is None:
        messages.error(request, "Choose an archive file to import.")
        return redirect(reverse("settings") + "#archive")
    try:
        moved = account_archive_import(
            actor=session_actor(request),
            records=archive_records(io.TextIOWrapper(cast(IO[bytes], upload.file),
                                                     encoding="utf-8")),
            keep_shares=request.POST.get("keep_shares") == "on")
    except GroveError as exc:
        messages.error(request, f"Nothing was imported: {exc.message}")
        return redirect(reverse("settings") + "#archive")
    except UnicodeDecodeError:
        messages.error(request, "Nothing was imported: the file is not UTF-8 text.")
        return redirect(reverse("settings") + "#archive")
    notes = moved.rows.get("notebooks_note", 0)
    messages.success(request, f"Imported the archive: {moved.rows.get('notebooks_notebook', 0)}"
                              f" notebooks, {notes} notes, "
                              f"{moved.rows.get('notebooks_revision', 0)} revisions, "
                              f"{moved.rows.get('ask_conversation', 0)} conversations. "
                              "Notes are being embedded by this Grove's model.")
    return redirect("settings")
