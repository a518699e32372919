import sys

from gapbench_report.cli import main

sys.exit(main())
