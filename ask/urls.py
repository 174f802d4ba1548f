from django.urls import path

from ask import views

urlpatterns = [
    path("ask/", views.ask_home, name="ask"),
    path("ask/new", views.ask_start, name="ask-start"),
    path("ask/sources", views.source_picker, name="ask-sources"),
    path("ask/<uuid:conversation_id>/", views.ask_conversation, name="ask-conversation"),
    path("ask/<uuid:conversation_id>/turns", views.ask_turn_submit, name="ask-turn-submit"),
    path("ask/<uuid:conversation_id>/turns/<uuid:turn_id>", views.ask_turn, name="ask-turn"),
    path("ask/<uuid:conversation_id>/turns/<uuid:turn_id>/retry", views.ask_turn_retry,
         name="ask-turn-retry"),
    path("ask/<uuid:conversation_id>/turns/<uuid:turn_id>/reask", views.ask_reask,
         name="ask-reask"),
    *[path(f"ask/<uuid:conversation_id>/turns/<uuid:turn_id>/proposals/<uuid:proposal_id>/"
           f"{act}", views.ask_proposal, {"act": act}, name=f"ask-proposal-{act}")
      for act in ("apply", "undo")],
    path("ask/<uuid:conversation_id>/delete", views.ask_delete, name="ask-delete"),
    path("ask/tidy/<uuid:notebook_id>", views.ask_tidy, name="ask-tidy"),
    path("leave/", views.leave, name="leave"),  # an off-site link a model wrote
]
