// A real OAuth 2.1 authorization server for the auth tests: the certified `oidc-provider` (installed by
// scripts/auth_server.sh), configured the way an MCP deployment would configure it, with no human in the
// loop. tests/auth/oauth_support.py starts it; it prints its issuer URL on stdout once it listens.
//
//   node oidc_provider.mjs CACHE PORT
//
// What it does:
// - dynamic client registration (RFC 7591) open to anyone; PKCE required for every client (S256 is the
//   only method oidc-provider 9 accepts); the issuer in the authorization response (RFC 9207);
// - resource indicators (RFC 8707): any http://127.0.0.1:PORT/... or http://localhost:PORT/... resource
//   is a resource server with the scopes `shipcode:read shipcode:write`, whose access tokens are JWTs
//   (RFC 9068, `aud` = the resource) signed with this process's own RSA key (RS256);
// - token introspection (RFC 7662) for confidential clients (a resource server registers one);
// - client metadata documents (CIMD, experimental in oidc-provider 9), fetched without the SSRF guard
//   so that a document served by the test on 127.0.0.1 (over HTTPS, NODE_EXTRA_CA_CERTS trusting its
//   certificate) can be used;
// - a client registered with a `scope` may only ever ask for those scopes (oidc-provider's default: an
//   MCP client registers with the scope of the first challenge, so that challenge must name every scope
//   it will need; a client registered without `scope` may ask for any);
// - the interaction (login, consent) approves at once: the account is the authorization request's
//   `login_hint` (default "alice"), and every requested scope of every requested resource is granted,
//   unless the request says what the person consents to (`consented_scope`, a test-only parameter: the
//   requested resource scopes outside it are declined, as a person unticking "write" would; the token
//   then carries less than was asked, and a later authorization may grant the rest).
// A client's registered `client_name` selects test variants of the access tokens it gets:
//   "...opaque..."  opaque tokens (to be introspected) instead of JWTs;
//   "...expired..." JWTs whose `exp` lies an hour in the past (signed by the issuer all the same).

import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [cache, portText] = process.argv.slice(2);
const port = Number(portText);
const { default: Provider } = await import(pathToFileURL(join(cache, 'node_modules', 'oidc-provider', 'lib', 'index.js')).href);

const issuer = `http://127.0.0.1:${port}`;
const RESOURCE = /^http:\/\/(127\.0\.0\.1|localhost):\d+\/[^?#]*$/;
const SCOPES = 'shipcode:read shipcode:write';

const signing = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
const jwks = { keys: [{ ...signing, kid: `key-${port}`, use: 'sig', alg: 'RS256' }] };

function variant(client, name) {
  return typeof client?.clientName === 'string' && client.clientName.includes(name);
}

const provider = new Provider(issuer, {
  jwks,
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  async findAccount(ctx, sub) {
    return { accountId: sub, async claims() { return { sub }; } };
  },
  scopes: ['openid', 'offline_access', ...SCOPES.split(' ')], // registration may name them (RFC 7591 `scope`)
  pkce: { required: () => true },
  // Test-only: what the (simulated) person consents to for this authorization; see interact().
  extraParams: ['consented_scope'],
  clientDefaults: { grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'none' },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    clientIdMetadataDocument: { enabled: true, ack: 'draft-02' },
    resourceIndicators: {
      enabled: true,
      async defaultResource(ctx, client, oneOf) {
        return oneOf;
      },
      async useGrantedResource() {
        return true;
      },
      async getResourceServerInfo(ctx, resource, client) {
        if (!RESOURCE.test(resource)) {
          throw new Provider.errors.InvalidTarget(`${resource} is not a resource of this test server`);
        }
        return {
          scope: SCOPES,
          accessTokenTTL: 600,
          accessTokenFormat: variant(client, 'opaque') ? 'opaque' : 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  formats: {
    customizers: {
      async jwt(ctx, token, jwt) {
        if (variant(ctx.oidc.client, 'expired')) {
          jwt.payload.iat -= 7200;
          jwt.payload.exp = jwt.payload.iat + 3600;
        }
      },
    },
  },
  // Test-only: client metadata documents live on 127.0.0.1 here, which the default fetch refuses (SSRF).
  fetch: (url, options) => globalThis.fetch(url, { ...options, dispatcher: undefined }),
});

// The interaction: log in the hinted account, then grant what was asked (of the resource scopes, only
// those in `consented_scope` when the request names it; the others are declined, so that the consent
// prompt is satisfied and the token carries what was granted). A declined scope stays declined in that
// login session's grant; the tests' browser (oauth_support.follow_authorization) starts a new session
// for each authorization, so a later one is asked afresh.
async function interact(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === 'login') {
    const accountId = typeof params.login_hint === 'string' && params.login_hint ? params.login_hint : 'alice';
    return provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const missing = prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  const consented = typeof params.consented_scope === 'string' ? new Set(params.consented_scope.split(' ')) : null;
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    const granted = scopes.filter((scope) => consented === null || consented.has(scope));
    const declined = scopes.filter((scope) => !granted.includes(scope));
    if (granted.length) grant.addResourceScope(indicator, granted.join(' '));
    if (declined.length) grant.rejectResourceScope(indicator, declined.join(' '));
  }
  const grantId = await grant.save();
  return provider.interactionFinished(req, res, { consent: details.grantId ? {} : { grantId } },
    { mergeWithLastSubmission: true });
}

const handle = provider.callback();
const server = createServer((req, res) => {
  if (/^\/interaction\/[^/?]+(\?|$)/.test(req.url)) {
    interact(req, res).catch((err) => {
      res.statusCode = 500;
      res.setHeader('content-type', 'text/plain');
      res.end(`interaction failed: ${err}`);
    });
    return;
  }
  handle(req, res);
});
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`${issuer}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
