// Builds the app once for the browser and server-process tests unless a build is already there.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

module.exports = async () => {
  const root = path.resolve(__dirname, '..');
  if (process.env.E2E_SKIP_BUILD && fs.existsSync(path.join(root, '.next/BUILD_ID'))) return;
  execFileSync(process.execPath, [path.join(root, 'node_modules/next/dist/bin/next'), 'build'], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' },
  });
};
