"""Who may use the HTTP endpoint: bearer tokens, checked by an OAuth 2.1 authorization server's keys
(`issuer`) or against a file of tokens (`token_file`), and the scopes each request needs (`scopes`).
`resource_server` is the HTTP face of it all: the metadata clients discover, the 401 and 403 answers.

Loaded only when the server is started with authentication: stdio and unauthenticated HTTP never import it.
"""
