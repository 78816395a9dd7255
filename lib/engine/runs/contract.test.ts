import { readInstall } from '../../content/projects';
import { bmadProject } from '../../../test/bmad-installs';
import { headlessContracts } from './contract';

describe('headless contracts of a real 6.12 install', () => {
  it('are the skills whose own files define a headless JSON result, each with its flag and schema', async () => {
    const root = await bmadProject('6.12.0');
    const install = await readInstall(root);
    const contracts = await headlessContracts(install!.skills);
    expect([...contracts.keys()].sort()).toEqual([
      'bmad-architecture',
      'bmad-brainstorming',
      'bmad-deep-recon',
      'bmad-prd',
      'bmad-prfaq',
      'bmad-product-brief',
      'bmad-spec',
      'bmad-sprint-planning',
      'bmad-ux',
    ]);
    expect(contracts.get('bmad-prd')).toEqual({
      skill: 'bmad-prd',
      flag: 'headless: true',
      intentRequired: true,
      files: ['.claude/skills/bmad-prd/references/headless.md', '.claude/skills/bmad-prd/assets/headless-schemas.md'],
    });
    expect(contracts.get('bmad-prfaq')).toMatchObject({ flag: '--headless', intentRequired: false, files: ['.claude/skills/bmad-prfaq/references/verdict.md'] });
    expect(contracts.get('bmad-spec')).toMatchObject({ flag: 'headless: true', intentRequired: false });
    expect(contracts.get('bmad-sprint-planning')).toMatchObject({ intentRequired: true, files: ['.claude/skills/bmad-sprint-planning/SKILL.md'] });
  }, 240_000);
});
