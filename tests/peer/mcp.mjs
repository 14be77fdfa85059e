// An MCP server's authorization metadata as the MCP TypeScript SDK serves it
// (@modelcontextprotocol/sdk's server-side auth routers), over HTTPS on loopback, for the tests.
//
// Environment:
//   PEER_FD        a bound, not yet listening socket inherited from the test (it reserved the port)
//   PEER_CERT, PEER_KEY   PEM files
//   PEER_RESOURCE  the resource URL the metadata announces (RFC 9728 `resource`)
//   PEER_ISSUER    the authorization server to list; when it is this server's own origin, the
//                  SDK's own authorization server metadata (RFC 8414) is served too
//   PEER_MODE      "metadata": the SDK's mcpAuthMetadataRouter (well-known locations), and the
//                  resource behind requireBearerAuth (a 401 without resource_metadata);
//                  "challenge": metadata only at /meta/prm.json, named by the 401 challenge that
//                  the SDK's requireBearerAuth sends from the resource itself
// Prints "listening" once it serves.
import { createServer } from 'node:https';
import { readFileSync } from 'node:fs';
import express from 'express';
import { createOAuthMetadata, mcpAuthMetadataRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { metadataHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/metadata.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';

const resource = new URL(process.env.PEER_RESOURCE);
const issuerUrl = new URL(process.env.PEER_ISSUER);
const mode = process.env.PEER_MODE || 'metadata';

// Metadata only: no client ever registers, authorizes or gets a token here.
const provider = {
  clientsStore: { getClient: async () => undefined },
  verifyAccessToken: async () => { throw new Error('no tokens here'); },
};
const oauthMetadata = createOAuthMetadata({ provider, issuerUrl });

const app = express();
if (mode === 'challenge') {
  const prmUrl = new URL('/meta/prm.json', resource);
  app.use('/meta/prm.json', metadataHandler({ resource: resource.href, authorization_servers: [oauthMetadata.issuer] }));
  app.use(resource.pathname, requireBearerAuth({ verifier: provider, resourceMetadataUrl: prmUrl.href }));
} else {
  app.use(mcpAuthMetadataRouter({ oauthMetadata, resourceServerUrl: resource }));
  // The MCP endpoint itself, behind the SDK's bearer middleware: a 401 to a client without a token.
  app.use(resource.pathname, requireBearerAuth({ verifier: provider }));
}

const server = createServer({ cert: readFileSync(process.env.PEER_CERT), key: readFileSync(process.env.PEER_KEY) }, app);
server.listen({ fd: Number(process.env.PEER_FD) }, () => console.log('listening'));

process.on('SIGTERM', () => process.exit(0));
