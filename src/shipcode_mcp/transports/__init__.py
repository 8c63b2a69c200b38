"""Transports: thin shells that move bytes between a peer and the sans-IO session."""
