import fs from 'node:fs';
import path from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';

/**
 * GitHub's own published OpenAPI description (the `@octokit/openapi` package, api.github.com) as a
 * judge of requests: the method and path must be an operation it describes, every query parameter
 * one the operation declares (with a value its enum allows), and the JSON body valid against the
 * operation's request schema (top-level properties it does not name are refused too). The fake
 * GitHub (test/forge-fakes.ts) answers a request it refuses with 400 and keeps the reason.
 */
type Json = Record<string, any>;

let spec: Json | null = null;
function load(): Json {
  if (!spec) {
    const dir = path.dirname(require.resolve('@octokit/openapi/package.json'));
    spec = JSON.parse(fs.readFileSync(path.join(dir, 'generated', 'api.github.com.json'), 'utf8')) as Json;
  }
  return spec;
}

interface Route {
  template: string;
  re: RegExp;
  literals: number;
}

let routes: Route[] | null = null;
function routeList(): Route[] {
  if (!routes) {
    routes = Object.keys(load().paths).map((template) => ({
      template,
      re: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
      literals: template.split('/').filter((s) => s && !s.startsWith('{')).length,
    }));
    // The most literal template wins (`/pulls/comments` before `/pulls/{pull_number}`).
    routes.sort((a, b) => b.literals - a.literals);
  }
  return routes;
}

function resolve(node: unknown, seen: Set<string> = new Set()): unknown {
  if (Array.isArray(node)) return node.map((n) => resolve(n, seen));
  if (!node || typeof node !== 'object') return node;
  const o = node as Json;
  if (typeof o.$ref === 'string') {
    const ref = o.$ref as string;
    if (seen.has(ref)) return {};
    const target = ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((acc: any, k) => acc?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], load());
    return resolve(target, new Set([...seen, ref]));
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(o)) out[k] = resolve(v, seen);
  return out;
}

const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
const compiled = new Map<string, ValidateFunction>();

/** Why GitHub's description does not allow the request; null when it does. */
export function githubRequestProblem(method: string, pathname: string, query: URLSearchParams, body: unknown): string | null {
  const route = routeList().find((r) => r.re.test(pathname));
  if (!route) return `${method} ${pathname}: no such path in GitHub's OpenAPI description`;
  const op = load().paths[route.template][method.toLowerCase()] as Json | undefined;
  if (!op) return `${method} ${route.template}: no such operation in GitHub's OpenAPI description`;
  const params = ((op.parameters ?? []) as unknown[]).map((p) => resolve(p) as Json);
  for (const [name, value] of query) {
    const p = params.find((x) => x.in === 'query' && x.name === name);
    if (!p) return `${method} ${route.template}: query parameter "${name}" is not described`;
    if (Array.isArray(p.schema?.enum) && !p.schema.enum.includes(value)) return `${method} ${route.template}: query ${name}=${value} is not one of ${p.schema.enum.join(', ')}`;
  }
  const rb = op.requestBody ? (resolve(op.requestBody) as Json) : null;
  if (!rb) return body === undefined ? null : `${method} ${route.template}: the operation takes no body`;
  if (body === undefined) return rb.required ? `${method} ${route.template}: a body is required` : null;
  const key = `${method} ${route.template}`;
  let validate = compiled.get(key);
  if (!validate) {
    const schema = { ...((rb.content?.['application/json']?.schema ?? {}) as Json) };
    if (schema.type === 'object' && schema.properties && schema.additionalProperties === undefined) schema.additionalProperties = false;
    validate = ajv.compile(schema);
    compiled.set(key, validate);
  }
  if (!validate(body)) return `${key}: the body does not match the description: ${ajv.errorsText(validate.errors)}`;
  return null;
}

/** The operation's id (`pulls/create`...), for the tests' records of what was asked. */
export function githubOperation(method: string, pathname: string): string | null {
  const route = routeList().find((r) => r.re.test(pathname));
  const op = route ? (load().paths[route.template][method.toLowerCase()] as Json | undefined) : undefined;
  return op?.operationId ?? null;
}
