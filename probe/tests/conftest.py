from __future__ import annotations

import pytest

from gapbench_probe import plan, run
from tests import fake_framework

TINY = plan.Profile("quick", 2, 0.001)


@pytest.fixture(autouse=True)
def fake_module():
    module = fake_framework.install_module()
    yield module


@pytest.fixture
def tiny(monkeypatch):
    """The run's cases are the fake framework's tiny ones."""
    monkeypatch.setattr(run, "cases", fake_framework.tiny_cases)
    return TINY
