"""Helpers of the conversation tests: start a conversation, submit a turn, run the queued
generate jobs as a worker would, read a turn back, and what the fake provider was sent."""

from __future__ import annotations

import uuid

from ask.rules import GENERATE
from ask.selectors import conversation_get, turn_get
from ask.services import conversation_create, turn_submit
from grove.kernel import jobs


def start(actor, **kwargs):
    made, created = conversation_create(actor=actor, conversation_id=uuid.uuid4(),
                                              **kwargs)
    assert created
    return made


def submit(actor, conversation, query, *, version=None, turn_id=None, **kwargs):
    if version is None:
        version = conversation_get(actor=actor, conversation_id=conversation.id).version
    turn, _ = turn_submit(actor=actor, conversation_id=conversation.id,
                                turn_id=turn_id or uuid.uuid4(), query=query,
                                expected_version=version, **kwargs)
    return turn


def generate(actor):
    """Run the queued generate jobs, as a worker would."""
    done = 0
    while jobs.run_batch(account_id=actor.account_id, kind=GENERATE):
        done += 1
    return done


def turn_of(actor, conversation, turn):
    return turn_get(actor=actor, conversation_id=conversation.id, turn_id=turn.id)


def chat_requests(server):
    return [r["body"] for r in server.requests if r["path"] == "/v1/chat/completions"]
