"""`python -m loopguard.cli …` runs the `loopguard` command."""

import sys

from . import main

sys.exit(main())
