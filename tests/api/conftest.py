from __future__ import annotations

import pytest
from openai import OpenAI

from tests.api.support import Surface, surface
from tests.conftest import API_KEY

__all__ = ["surface"]


@pytest.fixture
def client(surface: Surface) -> OpenAI:
    """The official SDK (strict validation, no retries) on the default project; every
    JSON response it receives is checked against `/openapi.json` when the test ends."""
    return surface.client(API_KEY)
