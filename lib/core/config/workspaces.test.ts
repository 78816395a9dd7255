import { loadConfig } from '.';

const load = (env: Record<string, string>) => loadConfig({ OPENAI_MODEL: 'm', ...env }, '/srv/app');

it('puts workspaces under DATA_DIR unless WORKSPACES_ROOT says where', () => {
  expect(load({}).workspacesRoot).toBe('/srv/app/data/workspaces');
  expect(load({ DATA_DIR: '/var/lib/bmad' }).workspacesRoot).toBe('/var/lib/bmad/workspaces');
  expect(load({ DATA_DIR: 'state' }).workspacesRoot).toBe('/srv/app/state/workspaces');
  expect(load({ WORKSPACES_ROOT: '/shared/ws', DATA_DIR: '/x' }).workspacesRoot).toBe('/shared/ws');
  expect(load({ WORKSPACES_ROOT: '  ' }).workspacesRoot).toBe('/srv/app/data/workspaces');
});
