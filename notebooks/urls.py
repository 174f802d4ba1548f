from django.urls import path

from notebooks import views

urlpatterns = [
    path("", views.home, name="home"),
    path("notes/new", views.note_create, name="note-create"),
    path("notebooks/new", views.notebook_create, name="notebook-create"),
]
