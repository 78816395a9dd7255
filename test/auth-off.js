// Tests run without accounts unless one opts in (createRuntime's `auth` option, or AUTH set here).
if (process.env.AUTH === undefined) process.env.AUTH = 'off';
