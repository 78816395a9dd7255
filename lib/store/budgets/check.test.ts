import { monthOf, projectStop, runBudgetProblem, runStop } from './check';
import { noBudget } from './types';

describe('budgets', () => {
  it('takes the calendar month in UTC, December into January', () => {
    expect(monthOf(new Date('2026-12-31T23:59:59.999Z'))).toEqual({ month: '2026-12', since: '2026-12-01T00:00:00.000Z', until: '2027-01-01T00:00:00.000Z' });
    // Late on the 31st west of UTC is already the next month's spend.
    expect(monthOf(new Date('2026-11-30T23:30:00-05:00')).month).toBe('2026-12');
  });

  it("stops at whichever of a run's limits is reached, and says which", () => {
    expect(runStop(undefined, { tokens: 10 ** 9, usd: 10 ** 6 })).toBeNull();
    expect(runStop({ tokens: 1000 }, { tokens: 999, usd: 0 })).toBeNull();
    expect(runStop({ tokens: 1000, usd: 1 }, { tokens: 1000, usd: 0.2 })).toEqual({ budget: 'run', message: "The run's token budget is spent: 1,000 tokens used of 1,000 tokens." });
    expect(runStop({ tokens: 1000, usd: 1 }, { tokens: 10, usd: 1.5 })).toEqual({ budget: 'run', message: "The run's budget of $1.00 is spent: $1.50 used." });
  });

  it("stops at a project's monthly limit, a zero limit included, never without one", () => {
    expect(projectStop(noBudget('p'), { tokens: 10 ** 9, usd: 10 ** 6 }, '2026-11')).toBeNull();
    const zero = { ...noBudget('p'), monthlyTokens: 0 };
    expect(projectStop(zero, { tokens: 0, usd: 0 }, '2026-11')?.message).toBe("The project's monthly token budget is spent: 0 tokens of 0 tokens in 2026-11 (UTC).");
    const usd = { ...noBudget('p'), monthlyUsd: 20 };
    expect(projectStop(usd, { tokens: 5, usd: 19.99 }, '2026-11')).toBeNull();
    expect(projectStop(usd, { tokens: 5, usd: 20.5 }, '2026-11')).toEqual({ budget: 'project', message: "The project's monthly budget of $20.00 is spent: $20.50 in 2026-11 (UTC)." });
  });

  it("names the field of a run's budget that is wrong", () => {
    expect(runBudgetProblem(undefined)).toBeNull();
    expect(runBudgetProblem({})).toBeNull();
    expect(runBudgetProblem({ tokens: 1, usd: 0.01 })).toBeNull();
    expect(runBudgetProblem(null)?.field).toBe('budget');
    expect(runBudgetProblem([1])?.field).toBe('budget');
    expect(runBudgetProblem({ tokens: 0 })?.field).toBe('budget.tokens');
    expect(runBudgetProblem({ tokens: 1.5 })?.field).toBe('budget.tokens');
    expect(runBudgetProblem({ tokens: '5' })?.field).toBe('budget.tokens');
    expect(runBudgetProblem({ usd: -1 })?.field).toBe('budget.usd');
    expect(runBudgetProblem({ usd: Infinity })?.field).toBe('budget.usd');
    expect(runBudgetProblem({ dollars: 5 })?.field).toBe('budget.dollars');
  });
});
