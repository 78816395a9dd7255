
// Two projects: the engine and API run in node; components run in jsdom.
const tsJest = {
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
const transformIgnorePatterns = [`/node_modules/(?!(${esm.join('|')})/)`];
const moduleNameMapper = { '^@/(.*)$': '<rootDir>/$1', '\\.(css)$': '<rootDir>/test/style-mock.js' };

/** @type {import('jest').Config} */
const config = {
  testTimeout: 30000,
  projects: [
    {
      displayName: 'node',
      testEnvironment: 'node',
      testMatch: ['<rootDir>/lib/**/*.test.ts', '<rootDir>/app/**/*.test.ts', '<rootDir>/test/**/*.test.ts', '<rootDir>/scripts/**/*.test.ts'],
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

module.exports = config;
