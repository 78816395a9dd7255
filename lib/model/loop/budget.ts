import type { Usage } from '../llm/types';

/**
 * The model calls and tokens of one turn. A loop that a tool of the turn runs (a subagent) gets a
 * child budget: its calls and tokens count in the turn's as well, so MAX_ITERATIONS bounds every
 * model call a user's message causes and the turn's usage is what it really cost.
 */
export class TurnBudget {
  private calls = 0;
  private tokens: Usage = { promptTokens: 0, completionTokens: 0, cachedTokens: 0 };
  readonly limit: number;

  constructor(limit: number, private readonly parent?: TurnBudget) {
    this.limit = Math.max(1, Math.floor(limit) || 1);
  }

  /** Model calls made on this budget (a child's included). */
  get steps(): number {
    return this.calls;
  }

  get usage(): Usage {
    return { ...this.tokens };
  }

  /** Model calls still allowed: this budget's own and never more than its parent's. */
  get remaining(): number {
    const own = this.limit - this.calls;
    return this.parent ? Math.min(own, this.parent.remaining) : own;
  }

  /** Counts one model call, here and in every parent. */
  takeStep(): void {
    this.calls++;
    this.parent?.takeStep();
  }

  addUsage(u: Usage): void {
    this.tokens = {
      promptTokens: this.tokens.promptTokens + u.promptTokens,
      completionTokens: this.tokens.completionTokens + u.completionTokens,
      cachedTokens: (this.tokens.cachedTokens ?? 0) + (u.cachedTokens ?? 0),
    };
    this.parent?.addUsage(u);
  }

  /** A budget of at most `limit` calls of its own, drawn from this one. */
  child(limit: number): TurnBudget {
    return new TurnBudget(limit, this);
  }
}
