from shipcode_mcp import Context, Server

server = Server("weather", "1.0.0", logging=True)

@server.tool
def forecast(ctx: Context, city: str, days: int = 3) -> list[float]:
    """Daily highs in °C for a city."""
    ctx.info(f"forecasting {days} days for {city}")
    return [round(18 + 2.5 * day, 1) for day in range(days)]

@server.resource("weather://cities", mime_type="text/plain")
def cities() -> str:
    return "Paris\nTokyo\nLima"

server.run()  # stdio; server.run(transport="http", port=8765) serves Streamable HTTP
