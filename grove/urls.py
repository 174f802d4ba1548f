from django.urls import include, path, re_path
from oauth2_provider import views as oauth_views

from grove.identity import archive_views, deletion_views, views
from grove.identity import oauth_views as oauth
from grove.interfaces.mcp import mcp_endpoint
from grove.interfaces.metrics import metrics_view
from grove.interfaces.rest import api, not_found_view
from grove.runtime.health import healthz, readyz

# Every REST router, named by module (feature apps' so core does not import them).
api.add_router("", "grove.interfaces.identity_api.router")
api.add_router("", "grove.interfaces.tool_api.router")
api.add_router("", "notebooks.api_context.router")  # before notebooks.api: see its docstring
api.add_router("", "notebooks.api.router")
api.add_router("", "ask.api.router")
api.add_router("", "sharing.api.router")

# The toolkit's endpoints under /o/ (authorize and token are Grove's subclasses), without
# its application-management pages (any signed-in user could create clients there).
OAUTH_PATTERNS = [
    path("authorize/", oauth.GroveAuthorizationView.as_view(), name="authorize"),
    path("token/", oauth.GroveTokenView.as_view(), name="token"),
    path("revoke_token/", oauth_views.RevokeTokenView.as_view(), name="revoke-token"),
    path("register/", oauth.GroveRegistrationView.as_view(), name="dcr-register"),
    path("register/<str:client_id>/", oauth.GroveRegistrationManagementView.as_view(),
         name="dcr-register-management"),
]

urlpatterns = [
    path("o/", include((OAUTH_PATTERNS, "oauth2_provider"), namespace="oauth2_provider")),
    # RFC 8414 at the origin root; RFC 9728 for /mcp (and the root form).
    path(".well-known/oauth-authorization-server",
         oauth_views.OAuthServerMetadataView.as_view(), name="oauth-server-metadata"),
    path(".well-known/oauth-protected-resource/mcp",
         oauth.GroveResourceMetadataView.as_view(), name="oauth-resource-metadata-mcp"),
    path(".well-known/oauth-protected-resource",
         oauth.GroveResourceMetadataView.as_view(), name="oauth-resource-metadata"),
    path("v1/", api.urls),
    re_path(r"^v1/(?P<rest>.*)$", not_found_view),
    path("mcp", mcp_endpoint, name="mcp"),
    path("setup/", views.owner_setup, name="setup"),
    path("login/", views.GroveLoginView.as_view(), name="login"),
    path("logout/", views.logout_view, name="logout"),
    path("connections/", views.connections, name="connections"),
    path("connections/<uuid:connection_id>/approve", views.connection_approve,
         name="connection-approve"),
    path("connections/<uuid:connection_id>/revoke", views.connection_revoke,
         name="connection-revoke"),
    path("connections/<uuid:connection_id>/edit", views.connection_edit,
         name="connection-edit"),
    path("settings/", views.account_settings, name="settings"),
    path("settings/password/", views.password_change, name="password-change"),
    path("settings/time-zone/", views.account_time_zone, name="settings-time-zone"),
    path("settings/credentials/", views.account_secret_rules, name="settings-credentials"),
    path("settings/archive", archive_views.account_archive_download, name="settings-archive"),
    path("settings/import-archive", archive_views.account_archive_upload,
         name="settings-import-archive"),
    path("settings/delete-account/", deletion_views.account_delete_page,
         name="settings-delete-account"),
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path(".well-known/openai-apps-challenge", views.openai_apps_challenge),
    path("", include("sharing.urls")),
    path("", include("ask.urls")),
    path("", include("notebooks.urls")),
]
