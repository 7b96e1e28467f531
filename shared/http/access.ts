/**
 * Who may call what (docs/rules.md, "Keys and limits"), from the route alone: health and CORS preflights are public;
 * reads need a reader; writes a writer; the admin group an admin; /metrics any key. An unknown route
 * needs any valid key before it is told 404, so that routes cannot be probed without one.
 */
import type { Role } from '../admin/api-keys.ts';

export type Access = 'public' | Role;

export function requiredAccess(group: string, method: string, relativeKey: string | null): Access {
  if (method === 'OPTIONS') return 'public';
  if (relativeKey === 'GET /health') return 'public';
  // The explorer's static files and the API's description are public; the data they show is not.
  if (group === 'docs') return 'public';
  if (group === 'admin') return 'admin';
  // GraphQL: any reader may query; the GraphQL function itself requires a writer for mutations.
  if (group === 'metrics' || group === 'graphql' || relativeKey === null) return 'reader';
  return method === 'GET' || method === 'HEAD' ? 'reader' : 'writer';
}
