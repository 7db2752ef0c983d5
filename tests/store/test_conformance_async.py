"""Store conformance through the asynchronous API (cases in ``conformance_cases.py``)."""

from __future__ import annotations

import pytest
from conformance_cases import CASES, ConformanceCase, open_store_for
from store_drivers import AsyncOps
from store_support import StoreFactory


@pytest.mark.parametrize("spec", CASES, ids=lambda spec: spec.name)
async def test_conformance_async(
    spec: ConformanceCase, store_factory: StoreFactory, request: pytest.FixtureRequest
) -> None:
    store = open_store_for(spec, store_factory, request)
    await spec.fn(store, AsyncOps(store))
