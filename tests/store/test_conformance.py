"""Store conformance through the synchronous API (cases in ``conformance_cases.py``)."""

from __future__ import annotations

import pytest
from conformance_cases import CASES, ConformanceCase, open_store_for
from store_drivers import SyncOps, run_sync
from store_support import StoreFactory


@pytest.mark.parametrize("spec", CASES, ids=lambda spec: spec.name)
def test_conformance_sync(
    spec: ConformanceCase, store_factory: StoreFactory, request: pytest.FixtureRequest
) -> None:
    store = open_store_for(spec, store_factory, request)
    run_sync(spec.fn(store, SyncOps(store)))
