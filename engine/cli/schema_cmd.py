"""`loopguard schema`: print the assembled JSON Schema of rules files.

The schema is the core (`schemas/rules.schema.json`) plus the options schema
of every installed detector plugin, so an editor's YAML language server
validates and completes plugin options too. Detectors left out (an invalid
options schema, a plugin that fails to load) are named on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from loopguard.config.schema import default_assembly


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="print the JSON Schema of rules files",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--indent", type=int, default=2, help="JSON indentation (default 2)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    assembly = default_assembly()
    for problem in assembly.problems:
        print(f"loopguard: warning: {problem}", file=sys.stderr)
    indent = args.indent if args.indent > 0 else None
    sys.stdout.write(json.dumps(assembly.schema, indent=indent, ensure_ascii=False) + "\n")
    return 0
