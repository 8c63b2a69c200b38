"""The fixtures of the official conformance suite (@modelcontextprotocol/conformance), built only with
the public API, served over our Streamable HTTP transport. scripts/conformance.sh runs the suite
against it:

    python examples/conformance_server.py [--port 8799] [--stateless]
"""

from __future__ import annotations

import argparse
import base64
import json
import time
from typing import Any

from shipcode_mcp import Context, Server, ToolError, audio_content, embedded_resource, image_content, text_content

# A 1x1 red PNG and a minimal WAV file, the suite's own test media.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
WAV = base64.b64decode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")

server = Server("shipcode-mcp-conformance", "1.0.0", logging=True, list_changed=True, subscribe=True)


# -- tools ----------------------------------------------------------------------------------------------
@server.tool
def test_simple_text() -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@server.tool
def test_image_content() -> dict[str, Any]:
    """Returns an image (a 1x1 red PNG)."""
    return image_content(PNG, "image/png")


@server.tool
def test_audio_content() -> dict[str, Any]:
    """Returns audio (a minimal WAV file)."""
    return audio_content(WAV, "audio/wav")


@server.tool
def test_embedded_resource() -> dict[str, Any]:
    """Returns an embedded text resource."""
    return embedded_resource("test://embedded-resource", "This is an embedded resource content.", "text/plain")


@server.tool
def test_multiple_content_types() -> list[dict[str, Any]]:
    """Returns text, an image and an embedded resource together."""
    return [
        text_content("Multiple content types test:"),
        image_content(PNG, "image/png"),
        embedded_resource("test://mixed-content-resource", json.dumps({"test": "data", "value": 123}), "application/json"),
    ]


@server.tool
def test_tool_with_logging(ctx: Context) -> str:
    """Sends three log messages while it runs."""
    ctx.info("Tool execution started")
    time.sleep(0.05)
    ctx.info("Tool processing data")
    time.sleep(0.05)
    ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool
def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100 when the request carries a progress token."""
    for step in (0, 50, 100):
        if step:
            time.sleep(0.05)
        ctx.report_progress(step, 100, f"Completed step {step} of 100")
    return f"Progress reported with token {ctx.progress_token}"


@server.tool
def test_error_handling() -> str:
    """Always fails, as a tool error the model can see."""
    raise ToolError("This tool intentionally returns an error for testing")


@server.tool
def test_sampling(ctx: Context, prompt: str) -> str:
    """Asks the client's model to answer `prompt` (sampling/createMessage).

    Args:
        prompt: The prompt to send to the LLM
    """
    result = ctx.sample(prompt, max_tokens=100)
    content = result.get("content", {})
    return f"LLM response: {content.get('text', '') if isinstance(content, dict) else content}"


@server.tool
def test_elicitation(ctx: Context, message: str) -> str:
    """Asks the user for a username and an email address (elicitation/create).

    Args:
        message: The message to show the user
    """
    result = ctx.elicit(message, {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    })
    return f"User response: action={result['action']}, content={json.dumps(result.get('content', {}))}"


# -- resources --------------------------------------------------------------------------------------------
@server.resource("test://static-text", title="Static Text Resource", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", title="Static Binary Resource", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG image)."""
    return PNG


@server.resource("test://template/{id}/data", title="Resource Template", mime_type="application/json")
def template_data(id: str) -> str:
    """Data for any id, substituted from the URI."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource("test://watched-resource", title="Watched Resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content"


# -- prompts ----------------------------------------------------------------------------------------------
@server.prompt(title="Simple Test Prompt")
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt(title="Prompt With Arguments")
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments.

    Args:
        arg1: First test argument
        arg2: Second test argument
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt(title="Prompt With Embedded Resource")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Any]:
    """A prompt that embeds a resource.

    Args:
        resourceUri: URI of the resource to embed
    """
    return [embedded_resource(resourceUri, "Embedded resource content for testing.", "text/plain"),
            "Please process the embedded resource above."]


@server.prompt(title="Prompt With Image")
def test_prompt_with_image() -> list[Any]:
    """A prompt that includes an image."""
    return [image_content(PNG, "image/png"), "Please analyze the image above."]


@server.completion(prompt="test_prompt_with_arguments", argument="arg1")
def complete_arg1(value: str) -> list[str]:
    return [word for word in ("paris", "park", "party", "test", "testing") if word.startswith(value)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8799)
    parser.add_argument("--stateless", action="store_true")
    args = parser.parse_args()
    raise SystemExit(server.run(transport="http", port=args.port, stateless=args.stateless))
