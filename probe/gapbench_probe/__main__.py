import sys

from gapbench_probe.cli import main

sys.exit(main())
