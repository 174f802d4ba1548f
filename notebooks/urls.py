from django.urls import path, re_path

from notebooks import views

urlpatterns = [
    path("", views.home, name="home"),
    path("notes/new", views.note_create, name="note-create"),
    path("notes/<uuid:note_id>/", views.note_detail, name="note"),
    path("notes/<uuid:note_id>/edit", views.note_edit, name="note-edit"),
    path("notes/<uuid:note_id>/move", views.note_move, name="note-move"),
    path("notes/<uuid:note_id>/diff", views.note_diff, name="note-diff"),
    path("notes/<uuid:note_id>/retry-indexing", views.note_retry_indexing,
         name="note-retry-indexing"),
    path("notes/<uuid:note_id>/revisions/<int:version>/restore", views.note_restore_revision,
         name="note-restore-revision"),
    path("notes/<uuid:note_id>/<str:action>", views.note_action, name="note-action"),
    path("notebooks/new", views.notebook_create, name="notebook-create"),
    path("notebooks/<uuid:notebook_id>/", views.notebook_manage, name="notebook"),
    path("notebooks/<uuid:notebook_id>/vision", views.notebook_vision_edit,
         name="notebook-vision"),
    path("notebooks/<uuid:notebook_id>/truth", views.notebook_truth_declare,
         name="notebook-truth"),
    path("notebooks/<uuid:notebook_id>/truth/inherit", views.notebook_truth_inherit,
         name="notebook-truth-inherit"),
    path("notebooks/<uuid:notebook_id>/truth/negatives", views.notebook_negative_add,
         name="notebook-negative"),
    path("notebooks/<uuid:notebook_id>/truth/negatives/<uuid:claim_id>/remove",
         views.notebook_negative_remove, name="notebook-negative-remove"),
    re_path(r"^notebooks/(?P<notebook_id>[0-9a-f-]{36})/truth/pending/(?P<pending_id>[0-9a-f-]{36})/"
            r"(?P<decision>accept|reject)$", views.notebook_pending_decide,
            name="notebook-pending"),
    path("notebooks/<uuid:notebook_id>/<str:action>", views.notebook_action,
         name="notebook-action"),
    path("settings/import", views.account_import_upload, name="import"),
    path("vision/", views.account_vision_edit, name="account-vision"),
    path("agents/brief/", views.agent_brief, name="agent-brief"),
    path("activity/", views.activity, name="activity"),
]
