from django.urls import path, re_path

from sharing import views

# A token is matched loosely (anything but "/") so that a malformed one gets the same
# 404 as an unknown or revoked one, from the same view.
TOKEN_PATTERN = r"(?P<token>[^/]+?)"  # noqa: S105 - a URL pattern

urlpatterns = [
    re_path(rf"^public/shares/{TOKEN_PATTERN}\.json$", views.public_share, {"as_json": True},
            name="public-share-json"),
    re_path(rf"^public/shares/{TOKEN_PATTERN}/notes\.json$", views.public_share_notes,
            name="public-share-notes"),
    re_path(rf"^public/shares/{TOKEN_PATTERN}/notes/(?P<note_id>[^/]+?)\.json$",
            views.public_share_note, {"as_json": True}, name="public-share-note-json"),
    re_path(rf"^public/shares/{TOKEN_PATTERN}/notes/(?P<note_id>[^/]+)$", views.public_share_note,
            name="public-share-note"),
    re_path(rf"^public/shares/{TOKEN_PATTERN}$", views.public_share, name="public-share"),
    path("shares/", views.share_list, name="shares"),
    path("shares/new", views.share_create, name="share-create"),
    path("shares/<uuid:share_id>/revoke", views.share_revoke, name="share-revoke"),
]
