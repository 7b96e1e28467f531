/** The service's shapes, from its OpenAPI document (client/src/schema.d.ts, generated). */
import type { components, paths } from './schema.ts';

export type { components, paths };
export type Block = components['schemas']['Block'];
export type LedgerEvent = components['schemas']['Event'];
export type Evidence = components['schemas']['Evidence'];

type Json<P extends keyof paths, M extends 'get' | 'post'> = paths[P][M] extends {
  responses: { [code: number]: { content: { 'application/json': infer T } } };
}
  ? T
  : never;
type Body<P extends keyof paths> = paths[P]['post'] extends { requestBody?: { content: { 'application/json': infer T } } } ? T : never;

export type ChainInfo = Json<'/api/v1/chains', 'get'>[number];
export type ChainStats = Json<'/api/v1/chains/{chain_name}/stats', 'get'>;
export type BlocksPage = Json<'/api/v1/chains/{chain_name}/blocks', 'get'>;
export type EntityTrace = Json<'/api/v1/entities/{entity_id}/trace', 'get'>;
export type Health = Json<'/api/v1/health', 'get'>;
/** What an append sends: entity, type, details (or an off-chain CID and nonce), metadata, subject. */
export type EventInput = Body<'/api/v1/chains/{chain_name}/events'>;
