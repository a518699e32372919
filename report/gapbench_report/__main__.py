import sys

from gapbench_report.cli.main import main

sys.exit(main())
