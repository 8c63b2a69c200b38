"""The benchmark of shipcode-mcp, as a package: bench/run.py is its command and re-exports its names."""
