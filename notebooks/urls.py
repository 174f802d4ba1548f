from django.urls import path

from notebooks import views

urlpatterns = [
    path("", views.home, name="home"),
    path("notes/new", views.note_create, name="note-create"),
    path("notes/<uuid:note_id>/", views.note_detail, name="note"),
    path("notes/<uuid:note_id>/edit", views.note_edit, name="note-edit"),
    path("notes/<uuid:note_id>/<str:action>", views.note_action, name="note-action"),
    path("notes/<uuid:note_id>/revisions/<int:version>/restore", views.note_restore_revision,
         name="note-restore-revision"),
    path("notebooks/new", views.notebook_create, name="notebook-create"),
]
