"""Fixtures for provider tests: a scripted loopback server, clean client pools, wire helpers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from agent_core_providers.clients import aclose_clients, close_clients


@pytest.fixture(autouse=True)
def _fresh_pools() -> Iterator[None]:
    """Each test gets new pooled clients (servers change port), closed afterwards."""
    yield
    close_clients()


def run_async(coro_fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``asyncio.run`` that also closes the loop's pooled clients before the loop ends."""

    async def main() -> Any:
        try:
            return await coro_fn(*args, **kwargs)
        finally:
            await aclose_clients()

    return asyncio.run(main())
