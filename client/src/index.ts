export { type ClientOptions, LedgerClient, parseEventId, type Receipt, type RetryOptions, type WitnessPolicy } from './client.ts';
export { ApiError, type Appended, type VerificationFailure, VerificationError } from './errors.ts';
export { MemoryStore, type StateStore, type TrustedState } from './state.ts';
export { computeBlockHash } from './blocks.ts';
export {
  cosignedMessage,
  keyId,
  leafHash,
  nodeHash,
  openNote,
  parseCheckpoint,
  parseVkey,
  verifyConsistency,
  verifyInclusion,
} from './tlog.ts';
export type * from './types.ts';
