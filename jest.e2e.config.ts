/**
 * @jest-config-loader esbuild-register
 */
import type { Config } from 'jest';
import base from './jest.config';

// Tests against the production build (`next build` in globalSetup, then `next start` per suite).
const node = base.projects![0] as Config;

const config: Config = {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/e2e/**/*.test.ts'],
  transform: node.transform,
  moduleNameMapper: node.moduleNameMapper,
  globalSetup: '<rootDir>/e2e/global-setup.js',
  testTimeout: 120000,
  maxWorkers: 1,
};

export default config;
