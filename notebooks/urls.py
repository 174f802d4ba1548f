from django.urls import path

from notebooks import views

urlpatterns = [
    path("", views.home, name="home"),
    path("notes/new", views.note_create, name="note-create"),
    path("notes/<uuid:note_id>/", views.note_detail, name="note"),
    path("notebooks/new", views.notebook_create, name="notebook-create"),
]
