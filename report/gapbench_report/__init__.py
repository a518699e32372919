"""gapbench's report: reads the JSON that the gapbench executable writes (never links its code)."""

# First, before numpy and matplotlib are imported: Ctrl-C while a command starts is one line.
from gapbench_report.cli import interrupt as _interrupt

_interrupt.install_when_a_command()
