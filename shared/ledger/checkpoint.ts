/**
 * The exact bytes a checkpoint signature covers, shared by the node that signs and any client that
 * checks: `verifiable-ledger checkpoint v1\n` followed by the RFC 8785 JSON of
 * {chain_name, node_id, root, timestamp, tree_size}. The node never signs a challenge that starts with
 * `verifiable-ledger ` (NODE_STATEMENT_PREFIX), so no challenge can be made into a checkpoint.
 */
import { canonicalJson } from './hashing.ts';

export const NODE_STATEMENT_PREFIX = 'verifiable-ledger ';
const CHECKPOINT_PREFIX = `${NODE_STATEMENT_PREFIX}checkpoint v1\n`;

export interface CheckpointFields {
  chain_name: string;
  tree_size: number;
  root: string;
  timestamp: number;
  node_id: string;
}

export function checkpointMessage(fields: CheckpointFields): Buffer {
  const { chain_name, tree_size, root, timestamp, node_id } = fields;
  return Buffer.from(CHECKPOINT_PREFIX + canonicalJson({ chain_name, node_id, root, timestamp, tree_size }), 'utf8');
}
