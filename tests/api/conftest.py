from __future__ import annotations

from collections.abc import Iterator

import pytest
from openai import OpenAI

from tests.conftest import API_KEY, Server


@pytest.fixture
def client(server: Server) -> Iterator[OpenAI]:
    with OpenAI(
        base_url=f"{server.base_url}/v1",
        api_key=API_KEY,
        max_retries=0,
        _strict_response_validation=True,
    ) as sdk:
        yield sdk
