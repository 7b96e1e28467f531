/**
 * Chain naming rules (contract.md §2, §5): `^[A-Za-z0-9_-]{1,64}$`, `main` reserved for the Main Chain,
 * `channel-` reserved for the business group's channel chains.
 */
import { InvalidChainNameError } from '../errors.ts';

export const MAIN_CHAIN = 'main';
export const CHANNEL_CHAIN_PREFIX = 'channel-';
export const CHAIN_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Whether a string could name a chain at all (used to answer 404 without a read). */
export function isWellFormedChainName(name: string): boolean {
  return CHAIN_NAME_PATTERN.test(name);
}

/** Throws the 400 of contract.md §1 when a client may not create a Sub-Chain with this name. */
export function assertCreatableSubChainName(name: string, options: { allowChannel?: boolean } = {}): void {
  if (!CHAIN_NAME_PATTERN.test(name)) {
    throw new InvalidChainNameError(
      `Invalid chain name '${name}': use 1 to 64 of the characters A-Z a-z 0-9 _ -`,
    );
  }
  if (name === MAIN_CHAIN) {
    throw new InvalidChainNameError(`'${MAIN_CHAIN}' is reserved for the Main Chain`);
  }
  if (!options.allowChannel && name.startsWith(CHANNEL_CHAIN_PREFIX)) {
    throw new InvalidChainNameError(`Names starting with '${CHANNEL_CHAIN_PREFIX}' are reserved for channels`);
  }
}
