/** @type {import('next').NextConfig} */
const nextConfig = {
  reactStrictMode: true,
  // Native and filesystem-heavy modules stay outside the server bundle; the tokenizer's
  // vocabularies (megabytes each) load from node_modules when first used.
  serverExternalPackages: ['better-sqlite3', 'bmad-method', 'gpt-tokenizer'],
  poweredByHeader: false,
};

module.exports = nextConfig;
