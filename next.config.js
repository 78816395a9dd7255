/** @type {import('next').NextConfig} */
const nextConfig = {
  reactStrictMode: true,
  // Native and filesystem-heavy modules stay outside the server bundle.
  serverExternalPackages: ['better-sqlite3', 'bmad-method'],
  poweredByHeader: false,
};

module.exports = nextConfig;
