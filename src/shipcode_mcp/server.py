"""The server as the library shows it: the registry (registry.py) with decorators that make tools,
resources and prompts of plain functions, and the ways to run it. The only core module that imports a
transport (lazily, in `run` and `http_app`).
"""

from __future__ import annotations

from .primitives import Prompt, PromptArgument, Resource, ResourceTemplate, Tool, template_variables
from .registry import Registry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, overload

    from .context import Context
    from .primitives import Completer

    F = TypeVar("F", bound=Callable[..., Any])


class Server(Registry):
    """Everything one MCP server offers, shared by all its sessions, and how to serve it."""

    # -- the library API: decorators --------------------------------------------------------------
    # A handler's parameters are filled by name from the request (tool arguments, template
    # variables, prompt arguments); one annotated `Context` (or named ctx/context) gets the request
    # context. Handlers may be plain or async functions; they run off the reading loop unless
    # registered with inline=True. Plain functions are read without `inspect`/`typing` (signature.py),
    # so a server whose handlers have plain hints starts without them.
    if TYPE_CHECKING:
        @overload
        def tool(self, fn: F, /, *, name: str | None = None, title: str | None = None,
                 description: str | None = None, input_schema: dict[str, Any] | None = None,
                 output_schema: dict[str, Any] | None = None, annotations: dict[str, Any] | None = None,
                 meta: dict[str, Any] | None = None, inline: bool = False, tasks: str | None = None) -> F: ...
        @overload
        def tool(self, fn: None = None, /, *, name: str | None = None, title: str | None = None,
                 description: str | None = None, input_schema: dict[str, Any] | None = None,
                 output_schema: dict[str, Any] | None = None, annotations: dict[str, Any] | None = None,
                 meta: dict[str, Any] | None = None, inline: bool = False,
                 tasks: str | None = None) -> Callable[[F], F]: ...

    def tool(self, fn: F | None = None, /, *, name: str | None = None, title: str | None = None,
             description: str | None = None, input_schema: dict[str, Any] | None = None,
             output_schema: dict[str, Any] | None = None, annotations: dict[str, Any] | None = None,
             meta: dict[str, Any] | None = None, inline: bool = False,
             tasks: str | None = None) -> F | Callable[[F], F]:
        """Register a function as a tool: `@server.tool` or `@server.tool(title=..., ...)`.

        Without `input_schema` the schema comes from the parameters' type hints, their descriptions
        from `Annotated[T, "..."]` or the docstring's Args section, the tool's description from the
        docstring. Without `output_schema`, a return type that names a structured shape (numbers,
        lists, TypedDict, dataclass, pydantic model) gives one, and the result becomes
        structuredContent. Raise `ToolError` for a failure the model should see.

        `tasks` ("optional" or "required") lets a call become a task of the tasks extension: the handler calls
        `ctx.run_as_task()` where the rest may take long. "required": a 2026-07-28 client that did not
        declare the extension is refused (-32021).
        """
        def register(fn: F) -> F:
            from .signature import Signature, jsonable  # off the start-up budget: only decorated functions (the CLI's tools are Tools)

            tool_name = name or fn.__name__
            signature = Signature(fn, f"tool {tool_name}")
            derived, wrapped = (output_schema, False) if output_schema is not None else signature.output_schema()

            def handler(context: Context, arguments: dict[str, Any]) -> Any:
                return jsonable(signature.call(context, arguments))

            async def async_handler(context: Context, arguments: dict[str, Any]) -> Any:
                return jsonable(await signature.acall(context, arguments))

            tool = Tool(tool_name, handler, input_schema if input_schema is not None else signature.input_schema(),
                        description=description if description is not None else signature.summary, title=title,
                        output_schema=derived, annotations=annotations, meta=meta, inline=inline, task_support=tasks)
            tool.wrap_output = wrapped
            if signature.is_async:
                tool.async_handler = async_handler
            self.add_tool(tool)
            return fn

        return register(fn) if fn is not None else register

    def resource(self, uri: str, *, name: str | None = None, title: str | None = None, description: str | None = None,
                 mime_type: str | None = None, size: int | None = None, annotations: dict[str, Any] | None = None,
                 meta: dict[str, Any] | None = None, inline: bool = False) -> Callable[[F], F]:
        """Register a function as the reader of the resource `uri`, or of a resource template when `uri`
        has RFC 6570 {variables}, which then fill the parameters of the same names (a parameter named
        `uri` gets the URI read). It returns str (text), bytes (blob), or resource contents dicts.
        """
        def register(fn: F) -> F:
            from .signature import Signature  # off the start-up budget: only decorated functions

            signature = Signature(fn, f"resource {uri}")
            common: dict[str, Any] = {"title": title, "mime_type": mime_type, "annotations": annotations, "meta": meta,
                                      "inline": inline, "description": description if description is not None else signature.summary}
            variables = template_variables(uri)
            takes_uri = "uri" in signature.params and "uri" not in variables
            unbound = [p for p in signature.required() if p not in variables and not (p == "uri" and takes_uri)]
            unused = [v for v in variables if v not in signature.params and not signature.var_keyword]
            if unbound or unused:
                raise TypeError(f"resource {uri}: the parameters of {fn.__name__} must match the template's variables "
                                f"(unbound parameters: {unbound or 'none'}; unused variables: {unused or 'none'})")
            if not variables:

                def read(context: Context, actual: str) -> Any:
                    return signature.call(context, {"uri": actual} if takes_uri else {})

                self.add_resource(Resource(uri, name or fn.__name__, size=size, reader=read, **common))
                return fn

            def read_template(context: Context, actual: str, values: dict[str, str]) -> Any:
                return signature.call(context, {**values, "uri": actual} if takes_uri else values)

            self.add_resource_template(ResourceTemplate(uri, name or fn.__name__, read_template, **common))
            return fn

        return register

    if TYPE_CHECKING:
        @overload
        def prompt(self, fn: F, /, *, name: str | None = None, title: str | None = None,
                   description: str | None = None, meta: dict[str, Any] | None = None, inline: bool = False) -> F: ...
        @overload
        def prompt(self, fn: None = None, /, *, name: str | None = None, title: str | None = None,
                   description: str | None = None, meta: dict[str, Any] | None = None,
                   inline: bool = False) -> Callable[[F], F]: ...

    def prompt(self, fn: F | None = None, /, *, name: str | None = None, title: str | None = None,
               description: str | None = None, meta: dict[str, Any] | None = None,
               inline: bool = False) -> F | Callable[[F], F]:
        """Register a function as a prompt: its parameters are the prompt's (string) arguments, required
        when they have no default. It returns a string (one user message), a list of messages (strings
        and content blocks are user messages), or a whole GetPromptResult.
        """
        def register(fn: F) -> F:
            from .signature import Signature  # off the start-up budget: only decorated functions

            prompt_name = name or fn.__name__
            signature = Signature(fn, f"prompt {prompt_name}")
            required = signature.required()
            arguments = [PromptArgument(p, signature.description(p), p in required) for p in signature.params]

            def render(context: Context, values: dict[str, str]) -> Any:
                return signature.call(context, values)

            self.add_prompt(Prompt(prompt_name, render, title=title, arguments=arguments, meta=meta, inline=inline,
                                   description=description if description is not None else signature.summary))
            return fn

        return register(fn) if fn is not None else register

    def completion(self, *, argument: str, prompt: str | None = None, resource: str | None = None) -> Callable[[F], F]:
        """Register `fn(value)` or `fn(value, arguments)` to complete `argument` of the prompt `prompt` or
        the variable of the resource template `resource`; `arguments` holds the values the client has
        already chosen. It returns the candidate strings, best first (the first 100 are sent).
        """
        if (prompt is None) == (resource is None):
            raise TypeError("completion needs exactly one of prompt= or resource=")

        def register(fn: F) -> F:
            import inspect  # off the start-up budget (heavy): only a completer's registration

            positional = [p for p in inspect.signature(fn).parameters.values()
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            completer: Completer = fn if len(positional) >= 2 else (lambda value, chosen: fn(value))
            if prompt is not None:
                self.add_completer("ref/prompt", prompt, argument, completer)
            else:
                self.add_completer("ref/resource", str(resource), argument, completer)
            return fn

        return register

    # -- running ----------------------------------------------------------------------------------
    def run(self, transport: str = "stdio", **options: Any) -> int:
        """Serve until the client leaves: over stdio (the default), or transport="http" for Streamable
        HTTP (the `http` extra; options host, port, stateless... of `transports.http.serving.serve_http`)."""
        if transport == "stdio":
            from .transports.stdio import serve_stdio  # Server.run only: the core imports no transport

            return serve_stdio(self, **options)
        if transport == "http":
            from .transports.http.serving import serve_http  # the http extra (Starlette, uvicorn), only for transport="http"

            return serve_http(self, **options)
        raise ValueError(f"unknown transport {transport!r}: use 'stdio' or 'http'")

    def http_app(self, **options: Any) -> Any:
        """This server as an ASGI application (Starlette) serving Streamable HTTP: mount it in another
        app, or give it to uvicorn yourself (`uvicorn module:app --workers 4` needs stateless=True)."""
        from .transports.http import create_app  # the http extra (Starlette), only for an ASGI app

        return create_app(self, **options)
