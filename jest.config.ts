/**
 * Node 20 cannot load a TypeScript config by itself; jest compiles it with this loader.
 * @jest-config-loader esbuild-register
 */
import type { Config } from 'jest';

// Two projects: the engine and API run in node; components run in jsdom.
const tsJest: NonNullable<Config['transform']> = {
  '^.+\\.(t|j)sx?$': [
    'ts-jest',
    { tsconfig: { jsx: 'react-jsx', module: 'commonjs', moduleResolution: 'node', esModuleInterop: true, isolatedModules: true } },
  ],
};

// ESM-only packages that jest must transform.
const esm = [
  'react-markdown', 'remark-.*', 'rehype-.*', 'unified', 'bail', 'is-plain-obj', 'trough', 'vfile.*', 'unist-.*',
  'mdast-.*', 'micromark.*', 'decode-named-character-reference', 'character-entities.*', 'property-information',
  'hast-.*', 'space-separated-tokens', 'comma-separated-tokens', 'zwitch', 'longest-streak', 'markdown-table',
  'ccount', 'escape-string-regexp', 'devlop', 'html-url-attributes', 'trim-lines', 'estree-.*', 'stringify-entities',
  'character-reference-invalid', 'is-.*', 'parse-entities', 'web-namespaces', 'html-void-elements', 'markdown-extensions',
];
// Better Auth and its dependencies ship only ES modules (.mjs); jest runs CommonJS on this Node.
const esmAuth = ['better-auth', '@better-auth', 'better-call', '@better-fetch', '@noble', 'defu', 'jose', 'nanostores', 'rou3', 'uncrypto'];
tsJest['^.+\\.mjs$'] = ['ts-jest', { tsconfig: { allowJs: true, module: 'commonjs', moduleResolution: 'node', esModuleInterop: true, isolatedModules: true } }];
const transformIgnorePatterns = [`/node_modules/(?!(${[...esm, ...esmAuth].join('|')})/)`];
const moduleNameMapper = { '^@/(.*)$': '<rootDir>/$1', '\\.(css)$': '<rootDir>/test/style-mock.js' };

const config: Config = {
  testTimeout: 30000,
  // On CI a handle a test left open (a stream, a child process) must not hang the pipeline until
  // its timeout: jest still names the problem ("did not exit"), then exits with the tests' result.
  forceExit: process.env.CI === 'true',
  projects: [
    {
      displayName: 'node',
      testEnvironment: 'node',
      testMatch: ['<rootDir>/lib/**/*.test.ts', '<rootDir>/app/**/*.test.ts', '<rootDir>/test/**/*.test.ts', '<rootDir>/scripts/**/*.test.ts'],
      // Tests run in the single-user mode (AUTH=off) unless they ask for accounts.
      setupFiles: ['<rootDir>/test/auth-off.js'],
      transform: tsJest,
      transformIgnorePatterns,
      moduleNameMapper,
    },
    {
      displayName: 'ui',
      testEnvironment: 'jsdom',
      testMatch: ['<rootDir>/app/**/*.test.tsx'],
      setupFilesAfterEnv: ['<rootDir>/test/setup-ui.ts'],
      transform: tsJest,
      transformIgnorePatterns,
      moduleNameMapper,
    },
  ],
};

export default config;
