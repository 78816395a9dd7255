// The errors module the web layer imports (`@/lib/errors`); it lives in lib/core/errors.
export * from '../core/errors';
