"""gapbench's framework probe: the families' work through the user's own PyTorch or TensorFlow,
written as a gapbench results file (family `framework`) for the report to set beside the
libraries' figures."""

__version__ = "0.1.0"

# First, before torch or TensorFlow is imported: Ctrl-C while the command starts is one line.
from gapbench_probe import interrupt as _interrupt  # noqa: E402

_interrupt.install_when_a_command()
