"""The frameworks the probe knows, by the name --framework takes. Importing an adapter imports
no framework: Adapter.open() does, so a Python without one still lists (and skips) its cases."""

from gapbench_probe.frameworks.base import Adapter, Runner, Unavailable
from gapbench_probe.frameworks.tensorflow_adapter import TensorflowAdapter
from gapbench_probe.frameworks.torch_adapter import TorchAdapter

ADAPTERS: dict[str, type[Adapter]] = {"torch": TorchAdapter, "tensorflow": TensorflowAdapter}

__all__ = ["ADAPTERS", "Adapter", "Runner", "Unavailable"]
