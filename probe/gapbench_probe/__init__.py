"""gapbench's framework probe: the families' work through the user's own PyTorch or TensorFlow,
written as a gapbench results file (family `framework`) for the report to set beside the
libraries' figures."""

__version__ = "0.1.0"
