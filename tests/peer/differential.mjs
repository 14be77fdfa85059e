// The differential matrix (issue 17 §3): a generated set of MCP servers, each a real HTTPS server
// on loopback, and the MCP TypeScript SDK's verdict on each, found by its own discovery functions
// over real HTTP (NODE_EXTRA_CA_CERTS trusts the test's throwaway CA). The test runs the gate
// against the same servers and compares.
//
// Environment: PEER_CERT, PEER_KEY (a leaf for "localhost").
// Prints one JSON line per case: {"name", "url", "sdk", "why"}, then "done", then serves until
// stdin closes. `sdk` is:
//   ready     the client would connect: no token needed, or the authorization server's metadata
//             was found and startAuthorization accepts it (code flow, S256)
//   defaults  discoverOAuthServerInfo resolved without any authorization server metadata: the
//             SDK would go on with default endpoints (/authorize, /token) nobody has checked
//   error     the SDK threw
//
// The client is modelled as `auth()` runs it: the request to the resource first (a GET here, as
// the gate sends; the transport POSTs, and a 401 is what leads to auth()); with a 401, the
// challenge's resource_metadata by extractWWWAuthenticateParams; then discoverOAuthServerInfo
// (RFC 9728 at the named URL, or the path form then the root; failing that the legacy origin),
// which calls discoverAuthorizationServerMetadata; then startAuthorization.
import { createServer } from 'node:https';
import { readFileSync } from 'node:fs';
import {
  discoverOAuthServerInfo,
  extractWWWAuthenticateParams,
  startAuthorization,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

const PRM_PATH = '/.well-known/oauth-protected-resource/mcp';
const PRM_ROOT = '/.well-known/oauth-protected-resource';
const A1 = '/.well-known/oauth-authorization-server/as';
const A2 = '/.well-known/openid-configuration/as';
const A3 = '/as/.well-known/openid-configuration';
const NAMED = '/meta/prm.json';
const OAUTH_ROOT = '/.well-known/oauth-authorization-server';
const OIDC_ROOT = '/.well-known/openid-configuration';

function docs(origin) {
  const as = `${origin}/as`;
  const oauth = (issuer) => ({
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    response_types_supported: ['code'],
    code_challenge_methods_supported: ['S256'],
  });
  const oidc = (issuer) => ({
    ...oauth(issuer),
    jwks_uri: `${issuer}/jwks`,
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
  });
  return {
    prm: { resource: `${origin}/mcp`, authorization_servers: [as] },
    oauth: oauth(as),
    oidc: oidc(as),
    'legacy-oauth': oauth(origin),
    'legacy-oidc': oidc(origin),
  };
}

// How each position of the order answers when it is the one under test, with the document that
// the next position then serves. The base case passes by the path form and RFC 8414 at /as.
const POSITIONS = {
  challenge: { at: NAMED, doc: 'prm', routes: { '/mcp': { challenge: [`Bearer resource_metadata="{origin}${NAMED}"`] }, [PRM_PATH]: { doc: 'prm' }, [A1]: { doc: 'oauth' } } },
  'prm-path': { at: PRM_PATH, doc: 'prm', routes: { [PRM_ROOT]: { doc: 'prm' }, [A1]: { doc: 'oauth' } } },
  'prm-root': { at: PRM_ROOT, doc: 'prm', routes: { [A1]: { doc: 'oauth' } } },
  'as-oauth': { at: A1, doc: 'oauth', routes: { [PRM_PATH]: { doc: 'prm' }, [A2]: { doc: 'oidc' } } },
  'as-oidc-inserted': { at: A2, doc: 'oidc', routes: { [PRM_PATH]: { doc: 'prm' }, [A3]: { doc: 'oidc' } } },
  'as-oidc-appended': { at: A3, doc: 'oidc', routes: { [PRM_PATH]: { doc: 'prm' } } },
};
const ANSWERS = ['404', '500', '502', '503', 'redirect-same-origin', 'redirect-cross-origin', 'redirect-to-http'];

function matrix() {
  const cases = [];
  for (const [position, p] of Object.entries(POSITIONS)) {
    for (const answer of ANSWERS) {
      const routes = { '/mcp': { status: 401 }, ...p.routes };
      routes[p.at] = /^\d+$/.test(answer) ? { status: Number(answer) } : { redirect: answer.slice('redirect-'.length), doc: p.doc };
      cases.push({ name: `${position} ${answer}`, routes });
    }
  }
  const only = (extra) => ({ '/mcp': { status: 401 }, ...extra });
  const challenged = (lines) => ({ '/mcp': { challenge: lines }, [NAMED]: { doc: 'prm' }, [A1]: { doc: 'oauth' } });
  cases.push(
    { name: 'base: path form, RFC 8414', routes: only({ [PRM_PATH]: { doc: 'prm' }, [A1]: { doc: 'oauth' } }) },
    { name: 'challenge with resource_metadata only', routes: challenged([`Bearer resource_metadata="{origin}${NAMED}"`]) },
    { name: 'challenge without resource_metadata', routes: { '/mcp': { challenge: ['Bearer realm="mcp"'] }, [PRM_PATH]: { doc: 'prm' }, [A1]: { doc: 'oauth' } } },
    { name: 'challenge in a second field line', routes: challenged(['Basic realm="x"', `Bearer resource_metadata="{origin}${NAMED}"`]) },
    { name: 'two challenges in one field, Bearer second', routes: challenged([`DPoP algs="ES256", Bearer resource_metadata="{origin}${NAMED}"`]) },
    { name: 'challenge with an obs-text realm', routes: challenged([`Bearer realm="Z\u00fcrich", resource_metadata="{origin}${NAMED}"`]) },
    { name: 'legacy: no PRM, RFC 8414 at the origin', routes: only({ [OAUTH_ROOT]: { doc: 'legacy-oauth' } }) },
    { name: 'legacy: no PRM, OIDC at the origin', routes: only({ [OIDC_ROOT]: { doc: 'legacy-oidc' } }) },
    { name: 'legacy: no PRM, no metadata at all', routes: only({}) },
    { name: 'no authorization: 200 JSON', routes: { '/mcp': { json: true } } },
    { name: 'no authorization: SSE stream', routes: { '/mcp': { stream: true } } },
  );
  return cases;
}

function handler(c, state) {
  return (req, res) => {
    const origin = state.origin;
    const path = req.url.split('?')[0];
    const moved = path.startsWith('/moved/') ? path.slice('/moved'.length) : undefined;
    const route = c.routes[moved ?? path];
    const json = (status, body) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (moved) return route?.doc ? json(200, docs(origin)[route.doc]) : json(404, {});
    if (!route) return json(404, { error: 'not_found' });
    if (route.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(': ping\n\n');
      const timer = setInterval(() => res.write(': ping\n\n'), 200);
      res.on('close', () => clearInterval(timer));
      return;
    }
    if (route.json) return json(200, { jsonrpc: '2.0', result: {} });
    if (route.challenge) {
      res.setHeader('www-authenticate', route.challenge.map((l) => l.replaceAll('{origin}', origin)));
      return json(401, { error: 'invalid_token' });
    }
    if (route.redirect) {
      const to = {
        'same-origin': `${origin}/moved${path}`,
        'cross-origin': `${state.other}${path}`,
        'to-http': `${origin.replace('https:', 'http:')}/moved${path}`,
      }[route.redirect];
      res.writeHead(302, { location: to });
      return res.end();
    }
    if (route.doc) return json(200, docs(origin)[route.doc]);
    return json(route.status, { error: `HTTP ${route.status}` });
  };
}

function listen(handle) {
  const tls = { cert: readFileSync(process.env.PEER_CERT), key: readFileSync(process.env.PEER_KEY) };
  const server = createServer(tls, handle);
  return new Promise((resolve) => server.listen(0, 'localhost', () => resolve(`https://localhost:${server.address().port}`)));
}

async function sdkVerdict(resourceUrl) {
  const first = await fetch(resourceUrl, { headers: { 'mcp-protocol-version': LATEST_PROTOCOL_VERSION }, redirect: 'manual' });
  if (first.ok) {
    await first.body?.cancel();
    return ['ready', 'the resource answers without a token: the client connects'];
  }
  const { resourceMetadataUrl } = first.status === 401 ? extractWWWAuthenticateParams(first) : {};
  await first.body?.cancel();
  const info = await discoverOAuthServerInfo(resourceUrl, { resourceMetadataUrl });
  if (!info.authorizationServerMetadata) {
    return ['defaults', `no authorization server metadata for ${info.authorizationServerUrl}`];
  }
  await startAuthorization(info.authorizationServerUrl, {
    metadata: info.authorizationServerMetadata,
    clientInformation: { client_id: 'c' },
    redirectUrl: 'http://localhost:1/callback',
  });
  const how = info.resourceMetadata ? 'RFC 9728' : 'legacy: origin as authorization server';
  return ['ready', `${how}; authorization server ${info.authorizationServerUrl}`];
}

const other = await listen((req, res) => {
  res.writeHead(404);
  res.end();
});
for (const c of matrix()) {
  const state = { other };
  state.origin = await listen(handler(c, state));
  const url = `${state.origin}/mcp`;
  let verdict;
  try {
    verdict = await sdkVerdict(url);
  } catch (e) {
    verdict = ['error', String(e.message ?? e)];
  }
  const [sdk, why] = verdict;
  console.log(JSON.stringify({ name: c.name, url, sdk, why: why.replace(/\s+/g, ' ').slice(0, 160) }));
}
console.log('done');
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
