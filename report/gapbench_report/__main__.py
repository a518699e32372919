import sys

from gapbench_report.commandline import main

sys.exit(main())
