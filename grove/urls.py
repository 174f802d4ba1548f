from django.urls import include, path

from grove import views

urlpatterns = [
    path("setup/", views.owner_setup, name="setup"),
    path("login/", views.GroveLoginView.as_view(), name="login"),
    path("logout/", views.logout_view, name="logout"),
    path(".well-known/openai-apps-challenge", views.openai_apps_challenge),
    path("", include("notebooks.urls")),
]
