import { outputRelativePath } from './documents';

describe('outputRelativePath', () => {
  it('maps the output folder and a project output folder to paths the files APIs know', () => {
    expect(outputRelativePath('{output_folder}/brief.md')).toBe('brief.md');
    expect(outputRelativePath('{output_folder}/planning/prd.md')).toBe('planning/prd.md');
    expect(outputRelativePath('{project-root}/_bmad-output/prd.md', '{project-root}/_bmad-output')).toBe('prd.md');
  });

  it('refuses files outside it', () => {
    expect(outputRelativePath('{bundle-root}/config.yaml')).toBeNull();
    expect(outputRelativePath('{project-root}/docs/a.md', '{project-root}/_bmad-output')).toBeNull();
    expect(outputRelativePath('{output_folder}/../x')).toBeNull();
    expect(outputRelativePath('{output_folder}/')).toBeNull();
  });
});
