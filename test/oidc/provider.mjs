#!/usr/bin/env node
/**
 * A real OpenID Connect provider (the `oidc-provider` package) for the single sign-on tests, on
 * 127.0.0.1. Its people are read from ACCOUNTS_FILE on every sign-in, so a test can change what the
 * provider says about someone (their email, whether it is verified, their groups) between logins.
 * Sign-in goes through the package's development interactions (a login form taking any account
 * id, then consent). Prints `ready <issuer>` once listening.
 *
 *   CLIENT_ID=... CLIENT_SECRET=... REDIRECT_URI=... ACCOUNTS_FILE=... node test/oidc/provider.mjs
 */
import fs from 'node:fs';
import http from 'node:http';
import Provider from 'oidc-provider';

const { CLIENT_ID, CLIENT_SECRET, REDIRECT_URI, ACCOUNTS_FILE } = process.env;

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: REDIRECT_URI.split(','), grant_types: ['authorization_code'], response_types: ['code'] }],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
  scopes: ['openid', 'email', 'profile', 'groups'],
  pkce: { required: () => true },
  cookies: { keys: ['test-cookie-key-for-the-oidc-provider'] },
  async findAccount(_ctx, sub) {
    const accounts = JSON.parse(fs.readFileSync(ACCOUNTS_FILE, 'utf8'));
    const person = accounts[sub];
    if (!person) return undefined;
    return { accountId: sub, claims: async () => ({ sub, ...person }) };
  },
});
// Plain http on loopback: the provider is told it is not behind TLS on purpose.
provider.proxy = false;
server.on('request', provider.callback());
process.stdout.write(`ready ${issuer}\n`);
