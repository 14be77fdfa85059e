// What the MCP TypeScript SDK's client (@modelcontextprotocol/sdk) decides about documents, with
// no network: each case's document is what its fetch answers. One JSON case per line on stdin:
//   {"name": "...", "kind": "as", "spec": "oauth"|"oidc", "doc": {...}}   an authorization server:
//       discoverAuthorizationServerMetadata (zod: OAuthMetadataSchema or
//       OpenIdProviderDiscoveryMetadataSchema), then startAuthorization (code flow, S256)
//   {"name": "...", "kind": "prm", "doc": {...}}   protected resource metadata:
//       discoverOAuthProtectedResourceMetadata (zod: OAuthProtectedResourceMetadataSchema)
// Prints one line per case: "NAME\taccepted" or "NAME\trejected\tWHY".
import { createInterface } from 'node:readline';
import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  startAuthorization,
} from '@modelcontextprotocol/sdk/client/auth.js';

const AS = 'https://as.example';
const RESOURCE = 'https://mcp.example/mcp';

function answering(wanted, doc) {
  return async (url) => {
    const path = new URL(String(url)).pathname;
    const body = path.includes(wanted) ? JSON.stringify(doc) : '{"error":"not_found"}';
    return new Response(body, {
      status: path.includes(wanted) ? 200 : 404,
      headers: { 'content-type': 'application/json' },
    });
  };
}

async function verdict(c) {
  if (c.kind === 'prm') {
    await discoverOAuthProtectedResourceMetadata(RESOURCE, undefined, answering('oauth-protected-resource', c.doc));
    return;
  }
  const wanted = c.spec === 'oidc' ? 'openid-configuration' : 'oauth-authorization-server';
  const metadata = await discoverAuthorizationServerMetadata(AS, { fetchFn: answering(wanted, c.doc) });
  await startAuthorization(AS, {
    metadata,
    clientInformation: { client_id: 'c' },
    redirectUrl: 'http://localhost:1/callback',
  });
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const c = JSON.parse(line);
  try {
    await verdict(c);
    console.log(`${c.name}\taccepted`);
  } catch (e) {
    console.log(`${c.name}\trejected\t${String(e.message ?? e).replace(/\s+/g, ' ').slice(0, 200)}`);
  }
}
