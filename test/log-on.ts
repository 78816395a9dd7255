// A test that reads the server's log lines imports this first: lib/core/log decides when it loads whether to write.
process.env.LOG_LEVEL = 'info';
export {};
