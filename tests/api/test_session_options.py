"""`review` and `prompt_cache_options` through the official SDK: kept at creation and
returned on create, retrieve and update; what corebox cannot honour is refused."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai import OpenAI

from tests.api.support import Surface, unchanged

NONE_ENV: Any = {"type": "none"}


def test_create_keeps_and_returns_review_and_prompt_cache_options(client: OpenAI) -> None:
    created = client.beta.agents.sessions.create(
        agent={"model": "scripted"},
        environment=NONE_ENV,
        input="hi",
        review="none",
        prompt_cache_options={"ttl": "12h"},
    )
    assert created.review == "none"
    assert created.prompt_cache_options is not None
    assert created.prompt_cache_options.ttl == "12h"
    got = client.beta.agents.sessions.retrieve(created.id)
    assert (got.review, got.prompt_cache_options) == (created.review, created.prompt_cache_options)

    updated = client.beta.agents.sessions.update(created.id, prompt_cache_options={})
    assert updated.prompt_cache_options is not None
    assert updated.prompt_cache_options.ttl == "30m"  # the documented default
    cleared = client.beta.agents.sessions.update(created.id, prompt_cache_options=None)
    assert cleared.prompt_cache_options is None and cleared.review == "none"


def test_streamed_creation_reports_the_options_in_its_first_event(client: OpenAI) -> None:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment=NONE_ENV,
            input="hi",
            stream=True,
            prompt_cache_options={"ttl": "30m"},
        )
    )
    session = events[0].session  # type: ignore[union-attr]
    assert session.prompt_cache_options is not None
    assert session.prompt_cache_options.ttl == "30m"


def test_auto_review_is_refused_as_unsupported(surface: Surface, client: OpenAI) -> None:
    with unchanged(surface.server.data_dir), pytest.raises(openai.BadRequestError) as raised:
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment=NONE_ENV, input="hi", review="auto_review"
        )
    assert (raised.value.code, raised.value.param) == (
        "unsupported_or_invalid_configuration",
        "review",
    )
    session = client.beta.agents.sessions.create(
        agent={"model": "scripted"}, environment=NONE_ENV, input="hi"
    )
    with pytest.raises(openai.BadRequestError) as raised:
        client.beta.agents.sessions.update(session.id, review="auto_review")
    assert raised.value.code == "unsupported_or_invalid_configuration"
