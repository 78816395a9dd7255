// Runs once when the Next.js server starts.
export async function register() {
  if (process.env.NEXT_RUNTIME === 'nodejs') {
    const { installShutdownHandlers } = await import('./lib/runtime/shutdown');
    installShutdownHandlers();
    // The build prerenders with whatever environment it has; only a serving process checks it.
    if (process.env.NEXT_PHASE === 'phase-production-build') return;
    const { checkConfiguration, warmTokenizers } = await import('./lib/runtime/startup');
    const checked = checkConfiguration();
    if ('error' in checked) {
      // A server that cannot route to its models must not start and fail every chat later.
      process.stderr.write(`bmad-orchestrator: refusing to start: ${checked.error}\n`);
      process.exit(1);
    }
    warmTokenizers(checked.config);
    // Headless runs a previous process left are settled now, and the queued ones start.
    const { getRuntime } = await import('./lib/runtime');
    getRuntime();
  }
}
