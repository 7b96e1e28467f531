/** What the business group's parts are made from, and what they share. */
import type { AccessControl } from '../access/access.ts';
import type { Ledger } from '../ledger/ledger.ts';
import type { OffchainStore, PayloadOpener } from '../ledger/offchain-port.ts';
import type { PersonalData } from '../ledger/subject-port.ts';
import type { ContractSandbox } from './contract-pool.ts';
import type { BusinessRepository, ChannelDetails, ChannelRecord } from './repository.ts';

export interface BusinessOptions {
  repository: BusinessRepository;
  /** The bare ledger: the group's own records go through it after the group's checks; callers' writes through a guarded one. */
  ledger: Ledger;
  access: AccessControl<ChannelRecord, ChannelDetails>;
  offchain: OffchainStore;
  /** Where contracts are checked and run: worker threads with hard deadlines (shared/business/contract-pool.ts). */
  sandbox: ContractSandbox;
  /** Private values whose JSON is larger go to IPFS; smaller ones stay inline, encrypted. */
  inlineThresholdBytes: number;
  /** Data subjects' keys: private values marked with a subject are sealed under them. */
  personalData?: PersonalData;
  now?: () => Date;
}

/** What the business group's parts share: its options, a clock, and how they read off-chain payloads. */
export interface BusinessContext extends Omit<BusinessOptions, 'now'> {
  stamp(): string;
  /**
   * An off-chain payload, opened for whom `opener` stands for, or the 422 that says which field could not be fetched
   * and decrypted.
   */
  readOffchain(cid: string, nonce: string, what: string, opener: PayloadOpener): Promise<unknown>;
}
