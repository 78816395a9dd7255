/** Every error reads the same way: the message, then its code, small, for whoever reports it. */
export function ErrorMessage({ message, code, prefix, className }: { message: string; code?: string; prefix?: string; className?: string }) {
  return (
    <p className={className} data-testid="error-message">
      {prefix}
      {message}
      {code ? (
        <>
          {' '}
          <small className="error-code" data-testid="error-code">
            {code}
          </small>
        </>
      ) : null}
    </p>
  );
}
