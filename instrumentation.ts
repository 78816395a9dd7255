// Runs once when the Next.js server starts.
export async function register() {
  if (process.env.NEXT_RUNTIME === 'nodejs') {
    const { installShutdownHandlers } = await import('./lib/engine/runtime/shutdown');
    installShutdownHandlers();
    // The build prerenders with whatever environment it has; only a serving process checks it.
    if (process.env.NEXT_PHASE === 'phase-production-build') return;
    const { checkConfiguration, warmTokenizers } = await import('./lib/engine/runtime/startup');
    const checked = checkConfiguration();
    if ('error' in checked) {
      // A server that cannot route to its models must not start and fail every chat later.
      process.stderr.write(`bmad-orchestrator: refusing to start: ${checked.error}\n`);
      process.exit(1);
    }
    warmTokenizers(checked.config);
    if (checked.config.store === 'postgres') {
      // Migrates before the first request (instances starting together queue on a lock); a
      // database not there yet is tried again by the store, and /api/health answers 503 meanwhile.
      // Its own short-lived pool: the runtime (and its store) belong to the route handlers' bundle.
      const { migrateDatabase } = await import('./lib/store/db');
      const migrated = await migrateDatabase(checked.config.databaseUrl!);
      if ('error' in migrated) process.stderr.write(`bmad-orchestrator: the database is not ready (${migrated.error}); /api/health answers 503 until it is.\n`);
    }
    // Headless runs a previous process left are settled now, and the queued ones start.
    const { getRuntime } = await import('./lib/engine/runtime');
    getRuntime();
    // The sprint autopilot goes on with the projects that have it on.
    const { startAutopilot } = await import('./lib/services/autopilot');
    startAutopilot();
  }
}
