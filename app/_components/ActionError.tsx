'use client';

/** What an action on a workspace or story was refused for, with a merge conflict's paths. */
export function ActionError({ error, testId }: { error: { message: string; paths?: string[] } | null; testId: string }) {
  if (!error) return null;
  return (
    <div className="notice notice-error" role="alert" data-testid={testId}>
      <p>{error.message}</p>
      {error.paths?.length ? (
        <ul data-testid="conflict-paths">
          {error.paths.map((p) => (
            <li key={p}>
              <code>{p}</code>
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
