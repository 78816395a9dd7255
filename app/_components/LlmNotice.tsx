import type { HealthData } from '@/types/api';
import { AlertIcon } from './icons';

/** Shown when the server has no model: chat would answer 503, so say up front what to set. */
export function LlmNotice({ health }: { health: HealthData | null }) {
  if (!health || health.llm.configured) return null;
  return (
    <div className="notice notice-warn banner" role="status" data-testid="llm-notice">
      <AlertIcon />
      <div>
        <p>
          <strong>No language model is configured.</strong> You can browse agents and past conversations, but chat needs a model.
        </p>
        <p>
          Set <code>OPENAI_API_KEY</code> (for OpenAI) or <code>OPENAI_BASE_URL</code> (for any OpenAI-compatible server such as Ollama, vLLM or
          LM Studio), and <code>OPENAI_MODEL</code>, in the server&apos;s environment or <code>.env</code>, then restart it.
        </p>
      </div>
    </div>
  );
}
