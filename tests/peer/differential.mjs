// The differential test's servers and its TypeScript clients (issue 17 §3, issue 28): a
// generated matrix of MCP servers, each a real HTTPS server on loopback, and what each SDK's
// own client decides about it, connecting as an application does:
//   v2    @modelcontextprotocol/client 2.4.0: Client with versionNegotiation 'auto' (POST
//         server/discover, initialize on a legacy answer), StreamableHTTPClientTransport with an
//         OAuthClientProvider (its own auth(): RFC 9728, RFC 8414/OIDC discovery, the
//         authorization request), then listTools;
//   v1    @modelcontextprotocol/sdk 1.32.2, the same with its Client (POST initialize first).
// "ready": connected and listed tools, or the OAuth flow reached the authorization endpoint the
// metadata names (the chain works; the browser step is the user's). "defaults": the client went
// on to default endpoints nobody published (no metadata anywhere), which the gate counts as not
// ready. Prints one JSON line per case, then "done", and keeps the servers up for the other
// clients (the Python SDK, the gate) until stdin closes.
import { createServer } from 'node:https';
import { readFileSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const PRM_PATH = '/.well-known/oauth-protected-resource/mcp';
const PRM_ROOT = '/.well-known/oauth-protected-resource';
const A1 = '/.well-known/oauth-authorization-server/as';
const A2 = '/.well-known/openid-configuration/as';
const A3 = '/as/.well-known/openid-configuration';
const NAMED = '/meta/prm.json';
const OAUTH_ROOT = '/.well-known/oauth-authorization-server';
const OIDC_ROOT = '/.well-known/openid-configuration';
const TIMEOUT_MS = 3000;

function docs(origin) {
  const as = `${origin}/as`;
  const oauth = (issuer) => ({
    issuer,
    // Not /authorize: a client that found no metadata goes there by default, and must be told apart.
    authorization_endpoint: `${issuer.replace(/\/$/, '')}/oauth2/authorize`,
    token_endpoint: `${issuer.replace(/\/$/, '')}/oauth2/token`,
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
    'prm-origin': { resource: origin, authorization_servers: [as] },
    'prm-origin-slash': { resource: `${origin}/`, authorization_servers: [as] },
    'prm-second-broken': { resource: `${origin}/mcp`, authorization_servers: [as, `${origin}/nowhere`] },
    'prm-first-broken': { resource: `${origin}/mcp`, authorization_servers: [`${origin}/nowhere`, as] },
    oauth: oauth(as),
    oidc: oidc(as),
    'oauth-cimd-string': { ...oauth(as), client_id_metadata_document_supported: 'true' },
    'oauth-issuer-slash': oauth(`${as}/`),
    'prm-listed-slash': { resource: `${origin}/mcp`, authorization_servers: [`${as}/`] },
    'legacy-oauth': oauth(origin),
    'legacy-oauth-slash': oauth(`${origin}/`),
    'legacy-oidc': oidc(origin),
  };
}

// How each position of the discovery order answers when it is the one under test, with the
// document that the next position then serves. The base case passes by the path form and RFC
// 8414 at /as. The endpoint answers every request with a 401 (a bearer middleware).
const POSITIONS = {
  challenge: { at: NAMED, doc: 'prm', routes: { '/mcp': { challenge: [`Bearer resource_metadata="{origin}${NAMED}"`] }, [PRM_PATH]: { doc: 'prm' }, [A1]: { doc: 'oauth' } } },
  'prm-path': { at: PRM_PATH, doc: 'prm', routes: { [PRM_ROOT]: { doc: 'prm' }, [A1]: { doc: 'oauth' } } },
  'prm-root': { at: PRM_ROOT, doc: 'prm', routes: { [A1]: { doc: 'oauth' } } },
  'as-oauth': { at: A1, doc: 'oauth', routes: { [PRM_PATH]: { doc: 'prm' }, [A2]: { doc: 'oidc' } } },
  'as-oidc-inserted': { at: A2, doc: 'oidc', routes: { [PRM_PATH]: { doc: 'prm' }, [A3]: { doc: 'oidc' } } },
  'as-oidc-appended': { at: A3, doc: 'oidc', routes: { [PRM_PATH]: { doc: 'prm' } } },
};
const ANSWERS = ['404', '500', '502', '503', 'redirect-same-origin', 'redirect-cross-origin', 'redirect-to-http'];

// The endpoint's own answers (issue 28): what a POST gets (`ok`: the MCP server proper, a
// 401 when protected, a modern server/discover result when open; `legacy`: a 2025 server that
// answers server/discover with a 400 JSON-RPC error and initialize properly; or a status, or
// no answer), what a GET gets (a 405, the SSE stream, a 401), and where the challenge naming
// the metadata is (only a protected server has one; its metadata is only at that URL). A
// `403-scope` asks for more scope (`insufficient_scope`), naming the metadata when in the POST.
const POSTS = ['ok', 'legacy', '403-scope', '403', '404', '405', '500', '503'];
const GETS = ['405', 'sse', '401'];

function chainCases() {
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
    // The chain's smaller rules (issue 28 §2).
    { name: 'root-form PRM names the origin', routes: only({ [PRM_ROOT]: { doc: 'prm-origin' }, [A1]: { doc: 'oauth' } }) },
    { name: 'root-form PRM names the origin with /', routes: only({ [PRM_ROOT]: { doc: 'prm-origin-slash' }, [A1]: { doc: 'oauth' } }) },
    { name: 'path-form PRM names the origin', routes: only({ [PRM_PATH]: { doc: 'prm-origin' }, [A1]: { doc: 'oauth' } }) },
    { name: 'legacy: issuer is the origin with /', routes: only({ [OAUTH_ROOT]: { doc: 'legacy-oauth-slash' } }) },
    { name: 'second authorization server broken', routes: only({ [PRM_PATH]: { doc: 'prm-second-broken' }, [A1]: { doc: 'oauth' } }) },
    { name: 'first authorization server broken', routes: only({ [PRM_PATH]: { doc: 'prm-first-broken' }, [A1]: { doc: 'oauth' } }) },
    { name: 'client_id_metadata_document_supported "true"', routes: only({ [PRM_PATH]: { doc: 'prm' }, [A1]: { doc: 'oauth-cimd-string' } }) },
    { name: 'issuer has a trailing / the listed server lacks', routes: only({ [PRM_PATH]: { doc: 'prm' }, [A1]: { doc: 'oauth-issuer-slash' } }) },
    { name: 'listed server has a trailing / the issuer lacks', routes: only({ [PRM_PATH]: { doc: 'prm-listed-slash' }, [A1]: { doc: 'oauth' } }) },
  );
  return cases;
}

function endpointCases() {
  const cases = [];
  for (const post of [...POSTS, 'hang']) {
    for (const get of post === 'hang' ? ['405'] : GETS) {
      cases.push({ name: `open: POST ${post}, GET ${get}`, endpoint: { access: 'open', post, get } });
      for (const challenge of get === '401' ? ['post', 'get'] : ['post']) {
        const endpoint = { access: 'protected', post, get, challenge };
        cases.push({ name: `protected: POST ${post}, GET ${get}, challenge in ${challenge.toUpperCase()}`, endpoint, routes: { [NAMED]: { doc: 'prm' }, [A1]: { doc: 'oauth' } } });
      }
    }
  }
  return cases;
}

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(body === undefined ? '' : JSON.stringify(body));
}

// An MCP endpoint as `e` says, at `origin`.
function mcp(e, req, res, origin, body) {
  const bearer = (named) => ({ 'www-authenticate': named ? `Bearer resource_metadata="${origin}${NAMED}"` : 'Bearer realm="mcp"' });
  if (req.method === 'GET') {
    if (e.get === '401') return send(res, 401, { error: 'invalid_token' }, bearer(e.challenge === 'get'));
    if (e.get === '405') return send(res, 405, { error: 'method not allowed' }, { allow: 'POST' });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(': ping\n\n');
    const timer = setInterval(() => res.write(': ping\n\n'), 200);
    return res.on('close', () => clearInterval(timer));
  }
  if (req.method !== 'POST') return send(res, 405, { error: 'method not allowed' });
  if (e.post === 'hang') return;
  if (e.post === '403-scope') {
    const named = e.challenge === 'post' ? `, resource_metadata="${origin}${NAMED}"` : '';
    return send(res, 403, { error: 'insufficient_scope' }, { 'www-authenticate': `Bearer error="insufficient_scope", scope="tools"${named}` });
  }
  if (/^\d+$/.test(e.post)) return send(res, Number(e.post), { error: `HTTP ${e.post}` });
  if (e.access === 'protected') return send(res, 401, { error: 'invalid_token' }, bearer(e.challenge === 'post'));
  let msg;
  try {
    msg = JSON.parse(body);
  } catch {
    return send(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
  }
  if (msg.id === undefined) return send(res, 202);
  // A 2026-07-28 request (its `_meta` names the revision) gets a result with `resultType`.
  const modern = msg.params?._meta?.['io.modelcontextprotocol/protocolVersion'] !== undefined;
  const result = (r) => send(res, 200, { jsonrpc: '2.0', id: msg.id, result: modern ? { resultType: 'complete', ...r } : r });
  const error = (status, code) => send(res, status, { jsonrpc: '2.0', id: msg.id, error: { code, message: 'Method not found' } });
  switch (msg.method) {
    case 'server/discover':
      if (e.post === 'legacy') return error(400, -32601);
      return result({ supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, serverInfo: { name: 'differential', version: '1' } });
    case 'initialize':
      return result({ protocolVersion: msg.params?.protocolVersion ?? '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'differential', version: '1' } });
    case 'tools/list':
      return result(modern ? { tools: [], ttlMs: 0, cacheScope: 'private' } : { tools: [] });
    default:
      return error(200, -32601);
  }
}

function handler(c, state) {
  return (req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => respond(c, state, req, res, body));
  };
}

function respond(c, state, req, res, body) {
  const origin = state.origin;
  const path = req.url.split('?')[0];
  if (c.endpoint && path === '/mcp') return mcp(c.endpoint, req, res, origin, body);
  const moved = path.startsWith('/moved/') ? path.slice('/moved'.length) : undefined;
  const route = (c.routes ?? {})[moved ?? path];
  if (moved) return route?.doc ? send(res, 200, docs(origin)[route.doc]) : send(res, 404, {});
  if (!route) return send(res, 404, { error: 'not_found' });
  if (route.challenge) {
    res.setHeader('www-authenticate', route.challenge.map((l) => l.replaceAll('{origin}', origin)));
    return send(res, 401, { error: 'invalid_token' });
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
  if (route.doc) return send(res, 200, docs(origin)[route.doc]);
  if (route.status === 401) return send(res, 401, { error: 'invalid_token' }, { 'www-authenticate': 'Bearer realm="mcp"' });
  return send(res, route.status, { error: `HTTP ${route.status}` });
}

function listen(handle) {
  const tls = { cert: readFileSync(process.env.PEER_CERT), key: readFileSync(process.env.PEER_KEY) };
  const server = createServer(tls, handle);
  return new Promise((resolve) => server.listen(0, 'localhost', () => resolve(`https://localhost:${server.address().port}`)));
}

// An OAuth client registered beforehand: the flow's end is the redirect to the authorization
// endpoint, recorded and not followed.
function provider(seen) {
  return {
    get redirectUrl() {
      return 'http://localhost:1/callback';
    },
    get clientMetadata() {
      return { client_name: 'differential', redirect_uris: ['http://localhost:1/callback'] };
    },
    clientInformation: () => ({ client_id: 'c' }),
    tokens: () => undefined,
    saveTokens: () => {},
    redirectToAuthorization: (url) => {
      seen.url = new URL(url);
    },
    saveCodeVerifier: () => {},
    codeVerifier: () => 'verifier',
  };
}

async function verdict(url, connect) {
  const seen = {};
  try {
    const how = await connect(url, provider(seen));
    return ['ready', how];
  } catch (e) {
    if (seen.url?.pathname.endsWith('/oauth2/authorize')) return ['ready', `authorization at ${seen.url.origin}${seen.url.pathname}`];
    if (seen.url) return ['defaults', `went on to the default ${seen.url.origin}${seen.url.pathname}`];
    return ['error', `${e.code ?? e.name}: ${e.message}`];
  }
}

async function v2(url, authProvider) {
  const client = new Client({ name: 'differential', version: '1' }, { versionNegotiation: { mode: 'auto', probe: { timeoutMs: TIMEOUT_MS } } });
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider });
  try {
    await client.connect(transport, { timeout: TIMEOUT_MS });
    await client.listTools(undefined, { timeout: TIMEOUT_MS });
    return `connected, protocol ${client.getNegotiatedProtocolVersion()}`;
  } finally {
    await client.close().catch(() => {});
  }
}

async function v1(url, authProvider) {
  const client = new ClientV1({ name: 'differential', version: '1' });
  const transport = new TransportV1(new URL(url), { authProvider });
  try {
    await client.connect(transport, { timeout: TIMEOUT_MS });
    await client.listTools(undefined, { timeout: TIMEOUT_MS });
    return 'connected';
  } finally {
    await client.close().catch(() => {});
  }
}

const other = await listen((req, res) => {
  res.writeHead(404);
  res.end();
});
const line = (s) => s.replace(/\s+/g, ' ').slice(0, 160);
for (const c of [...endpointCases(), ...chainCases()]) {
  const state = { other };
  state.origin = await listen(handler(c, state));
  const url = `${state.origin}/mcp`;
  const [sdk, why] = await verdict(url, v2);
  const [v1sdk, v1why] = await verdict(url, v1);
  console.log(JSON.stringify({ name: c.name, url, v2: sdk, v2_why: line(why), v1: v1sdk, v1_why: line(v1why) }));
}
console.log('done');
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
