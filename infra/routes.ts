/**
 * The route table, for the cloud stack and the local gateway. It is defined in shared/api/routes.ts so
 * that the service can also describe itself from it (GET /openapi.json) without importing infra.
 */
export * from '../shared/api/routes.ts';
