"""The bundle's entry point: `uv run server/main.py FOLDER...` in the unpacked bundle, where uv has
installed the project (its pyproject.toml sits beside this folder), runs the `shipcode-mcp` command."""

import sys

from shipcode_mcp.cli import main

sys.exit(main())
