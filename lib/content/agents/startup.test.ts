import { classifyCriticalActions } from './startup';

describe('classifyCriticalActions', () => {
  it.each([
    ['Load into memory {bundle-root}/config.yaml and set variables: user_name, communication_language', '{bundle-root}/config.yaml', ['user_name', 'communication_language']],
    ['Load into memory {project-root}/bmad/bmm/config.yaml and set variable project_name, output_folder, user_name', '{project-root}/bmad/bmm/config.yaml', ['project_name', 'output_folder', 'user_name']],
    ['Load into memory {bundle-root}/config.yaml', '{bundle-root}/config.yaml', []],
    ['load into memory {core-root}/tasks/workflow.md.', '{core-root}/tasks/workflow.md', []],
  ])('%s → a load', (text, path, variables) => {
    const [a] = classifyCriticalActions([text]);
    expect(a).toMatchObject({ kind: 'load', load: { path, variables } });
  });

  it('keeps other items as instructions, whitespace normalised', () => {
    const out = classifyCriticalActions(['Remember the user\n   is {user_name}', '  ', 'Load the dice and roll']);
    expect(out).toEqual([
      { kind: 'instruction', text: 'Remember the user is {user_name}' },
      { kind: 'instruction', text: 'Load the dice and roll' },
    ]);
  });
});
