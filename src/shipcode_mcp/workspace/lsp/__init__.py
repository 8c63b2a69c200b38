"""Language servers as precise backends of the code tools (`--precise`): finding them, running them in the
sandbox, and speaking LSP to them."""
