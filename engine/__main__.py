"""`python -m loopguard …` runs the `loopguard` command (same subcommands, exit codes)."""

import sys

from loopguard.cli import main

if __name__ == "__main__":  # importing this module (e.g. by a doc tool) runs nothing
    sys.exit(main())
