"""`python -m loopguard.cli …` runs the `loopguard` command."""

import sys

from loopguard.cli import main

sys.exit(main())
