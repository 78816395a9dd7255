// Tests against the production build (`next build` in globalSetup, then `next start` per suite).
const base = require('./jest.config.js');
const node = base.projects[0];

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/e2e/**/*.test.ts'],
  transform: node.transform,
  moduleNameMapper: node.moduleNameMapper,
  globalSetup: '<rootDir>/e2e/global-setup.js',
  testTimeout: 120000,
  maxWorkers: 1,
};
