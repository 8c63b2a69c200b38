"""`python -m shipcode_mcp`."""

import sys

from .cli import main

sys.exit(main())
