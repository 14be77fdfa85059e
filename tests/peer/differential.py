"""The differential test's Python client (issue 28): what the Python SDK `mcp` 2.x decides about
each server `differential.mjs` serves, connecting as an application does: `Client` in mode
'auto' (POST server/discover, initialize on a legacy answer; `client/_probe.py`) over
`streamable_http_client` with an `OAuthClientProvider` (RFC 9728, RFC 8414/OIDC discovery, the
authorization request), then `list_tools`.

Reads one JSON case a line on stdin ({"name", "url"}), prints one a line ({"name", "py",
"py_why"}): "ready" (connected and listed tools, or the OAuth flow reached the authorization
endpoint the metadata names), "defaults" (it went on to a default endpoint nobody published),
or "error". CA: SSL_CERT_FILE.
"""

import asyncio
import json
import os
import ssl
import sys

import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

TIMEOUT = 3.0
REDIRECT = "http://localhost:1/callback"


class Registered:
    """A client registered beforehand, no tokens."""

    async def get_tokens(self) -> OAuthToken | None:
        return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        pass

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return OAuthClientInformationFull(client_id="c", redirect_uris=[REDIRECT])

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        pass


class Redirected(Exception):
    pass


async def verdict(url: str) -> tuple[str, str]:
    seen: dict[str, str] = {}

    async def redirect_handler(authorization_url: str) -> None:
        seen["url"] = authorization_url
        raise Redirected(authorization_url)

    async def callback_handler():
        raise Redirected("no callback")

    auth = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(client_name="differential", redirect_uris=[REDIRECT]),
        storage=Registered(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    trust = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    try:
        async with httpx2.AsyncClient(auth=auth, verify=trust, timeout=TIMEOUT) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="auto") as client:
                await client.list_tools()
                return "ready", "connected"
    except BaseException as e:  # anyio wraps what the task group raised
        where = seen.get("url", "").split("?")[0]
        if where.endswith("/oauth2/authorize"):
            return "ready", f"authorization at {where}"
        if where:
            return "defaults", f"went on to the default {where}"
        return "error", describe(e)


def describe(e: BaseException) -> str:
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return f"{type(e).__name__}: {e}"


async def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        try:
            py, why = await asyncio.wait_for(verdict(case["url"]), 4 * TIMEOUT)
        except TimeoutError:
            py, why = "error", "no verdict in time"
        why = " ".join(why.split())[:160]
        print(json.dumps({"name": case["name"], "py": py, "py_why": why}), flush=True)


asyncio.run(main())
