from django.urls import include, path, re_path

from grove import views
from grove.api import api, not_found_view
from grove.mcp import mcp_endpoint

# Feature apps' REST routers, named by module so core does not import them.
api.add_router("", "notebooks.api.router")

urlpatterns = [
    path("v1/", api.urls),
    re_path(r"^v1/(?P<rest>.*)$", not_found_view),
    path("mcp", mcp_endpoint, name="mcp"),
    path("setup/", views.owner_setup, name="setup"),
    path("login/", views.GroveLoginView.as_view(), name="login"),
    path("logout/", views.logout_view, name="logout"),
    path("connections/", views.connections, name="connections"),
    path("connections/<uuid:connection_id>/revoke", views.connection_revoke,
         name="connection-revoke"),
    path("settings/", views.account_settings, name="settings"),
    path("healthz", views.healthz, name="healthz"),
    path(".well-known/openai-apps-challenge", views.openai_apps_challenge),
    path("", include("notebooks.urls")),
]
