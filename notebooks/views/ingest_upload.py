"""Bring notes in on the website (issue 22): upload a folder or a zip, watch it being
unpacked and ingested by a background job (`notebooks.services.ingest_upload`). The
request stores the upload and answers with the progress page at once."""

from __future__ import annotations

import json
import tempfile
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from grove.interfaces.middleware import session_actor
from grove.kernel.errors import GroveError
from notebooks.context import notebooks_for
from notebooks.ingest.files import Skipped
from notebooks.models import Kind
from notebooks.services.ingest_upload import (
    folder_as_zip,
    ingest_upload_get,
    ingest_upload_list,
    ingest_upload_start,
)

SPOOL_BYTES = 16 * 1024 * 1024  # a folder's zip spills to disk past this


def _page(request: HttpRequest, *, error: str | None = None, status: int = 200,
          form: dict[str, Any] | None = None) -> HttpResponse:
    actor = session_actor(request)
    return render(request, "notebooks/ingest.html", {
        "section": "ingest", "uploads": ingest_upload_list(actor=actor),
        "paths": notebooks_for(request).paths(), "kinds": Kind.values, "error": error,
        "form": form or {"notebook": "", "kind": "note", "subfolders": True}}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def ingest_upload(request: HttpRequest) -> HttpResponse:
    """GET: the form and the recent uploads. POST: a zip (`archive`) or a folder's files
    (`folder`, with their relative paths in `paths`, as the page's script sends them)
    stored for the job to unpack and ingest; then the upload's progress page."""
    if request.method == "GET":
        return _page(request)
    notebook = request.POST.get("notebook", "")
    kind = request.POST.get("kind", "note")
    subfolders = request.POST.get("subfolders") == "on"
    form = {"notebook": notebook, "kind": kind, "subfolders": subfolders}
    archive = request.FILES.get("archive")
    folder = request.FILES.getlist("folder")
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115
    left_out: list[Skipped] = []
    try:
        if archive is not None and archive.size:
            name = archive.name or "upload.zip"
            for block in archive.chunks():
                spool.write(block)
        elif folder:
            try:
                paths = json.loads(request.POST.get("paths", ""))
            except ValueError:
                paths = None
            if not isinstance(paths, list) or len(paths) != len(folder) \
                    or not all(isinstance(p, str) for p in paths):
                paths = [file.name for file in folder]  # no script: names without folders
            name = paths[0].split("/", 1)[0] if "/" in paths[0] else "folder"
            left_out = folder_as_zip(zip(paths, folder, strict=True), spool)
        else:
            return _page(request, error="Choose a zip file or a folder.", status=400,
                         form=form)
        spool.seek(0)
        try:
            started = ingest_upload_start(
                actor=session_actor(request), notebook=notebook, archive=spool,
                name=name, kind=kind, subfolders=subfolders, skipped=left_out)
        except GroveError as exc:
            return _page(request, error=exc.message, status=exc.status, form=form)
    finally:
        spool.close()
    return redirect("ingest-progress", upload_id=started.id)


@login_required
@require_GET
def ingest_progress(request: HttpRequest, upload_id: str) -> HttpResponse:
    """One upload's progress; the page asks again every second (htmx) until it is done,
    then loads itself once more — the sidebar's notebook counts, drawn when the page
    first loaded, then show the notes brought in."""
    upload = ingest_upload_get(actor=session_actor(request), upload_id=upload_id)
    template = "notebooks/ingest_progress.html"
    if request.headers.get("HX-Request"):
        if upload.finished:
            response = HttpResponse(status=204)
            response["HX-Refresh"] = "true"
            return response
        template += "#progress"
    return render(request, template, {"section": "ingest", "upload": upload})
