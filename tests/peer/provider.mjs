// A certified OpenID Provider (panva/oidc-provider) over HTTPS on loopback, for the peer tests.
// Environment: PEER_ISSUER (exact issuer), PEER_FD (a bound, not yet listening socket inherited
// from the test, which reserved its port), PEER_CERT and PEER_KEY (PEM files). Connections are
// refused until it listens: a test makes a cold start by starting it late. Prints "listening"
// once it serves.
import { createServer } from 'node:https';
import { readFileSync } from 'node:fs';
import Provider from 'oidc-provider';

const issuer = process.env.PEER_ISSUER;
const fd = Number(process.env.PEER_FD);

const provider = new Provider(issuer, {
  clients: [{ client_id: 'gate-test', client_secret: 'not-a-secret', redirect_uris: ['https://app.test/cb'] }],
});
provider.on('server_error', (ctx, err) => console.error('server_error', err));

// An issuer with a path (Keycloak style) is mounted under that path, as a reverse proxy would.
const prefix = new URL(issuer).pathname.replace(/\/$/, '');
const callback = provider.callback();
const handler = (req, res) => {
  if (prefix && !(req.url === prefix || req.url.startsWith(prefix + '/'))) {
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
    return;
  }
  req.originalUrl = req.url;
  req.url = req.url.slice(prefix.length) || '/';
  callback(req, res);
};

const server = createServer({ cert: readFileSync(process.env.PEER_CERT), key: readFileSync(process.env.PEER_KEY) }, handler);
// The socket is bound to loopback by the test; provider.listen() would bind every interface.
server.listen({ fd }, () => console.log('listening'));

process.on('SIGTERM', () => process.exit(0));
