import path from 'node:path';
import OpenAI from 'openai';
import { loadConfig, type Config } from '../config';
import { openConversationStore } from '../conversations';
import type { ConversationStore } from '../conversations/types';
import { createCatalog, type Catalog } from '../agents';
import { createLlmClient } from '../llm';
import { AppError } from '../errors';
import type { ChatDeps } from '../chat';
import { createProjectCatalog, type ProjectCatalog } from '../projects';
import { createDoctorCache, type DoctorCache } from '../doctor';

/** The long-lived objects of one server process, built on first use. */
export interface Runtime extends ChatDeps {
  config: Config;
  store: ConversationStore;
  catalog: Catalog;
  projects: ProjectCatalog;
  /** Projects' diagnoses, kept a few seconds (GET /api/projects/:id). */
  doctor: DoctorCache;
}

export function createRuntime(config: Config = loadConfig(), store?: ConversationStore): Runtime {
  let client: OpenAI | null = null;
  return {
    config,
    store: store ?? openConversationStore({ store: config.store, dataDir: config.dataDir }),
    catalog: createCatalog(config.bundlesRoot, { coreRoot: config.coreRoot, projectRoot: config.projectRoot, outputPath: config.outputPath, revalidateMs: 250 }),
    projects: createProjectCatalog(config.projectsRoot, { revalidateMs: 250 }),
    doctor: createDoctorCache({ ttlMs: 5000 }),
    auditDir: path.join(config.dataDir, 'audit'),
    llm: () => {
      if (!config.llm.configured) throw new AppError('E_LLM_NOT_CONFIGURED', 'No model is configured.');
      client ??= createLlmClient(config.llm);
      return client;
    },
  };
}

// Kept on globalThis so dev-mode module reloads do not open a second database handle.
const holder = globalThis as unknown as { __bmadRuntime?: Runtime };

export function getRuntime(): Runtime {
  holder.__bmadRuntime ??= createRuntime();
  return holder.__bmadRuntime;
}

/** For tests: replace (or drop) the process runtime. */
export async function setRuntime(runtime: Runtime | undefined): Promise<void> {
  const previous = holder.__bmadRuntime;
  // Swapped before the close, so no caller picks up a store that is closing.
  holder.__bmadRuntime = runtime;
  if (previous && previous !== runtime) await previous.store.close();
}
