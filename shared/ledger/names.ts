/**
 * Chain naming rules: `^[A-Za-z0-9_-]{1,64}$`; `main` is reserved for the Main Chain and names starting
 * with `channel-` for the business group's channel chains. Reserved names are compared without regard
 * to case (`MAIN`, `Channel-x` are refused too), so that no chain can pass for the Main Chain or a
 * channel's chain to a reader. Names are ASCII only, so no Unicode normalisation is needed.
 */
import { InvalidChainNameError } from '../errors.ts';

export const MAIN_CHAIN = 'main';
export const CHANNEL_CHAIN_PREFIX = 'channel-';
export const CHAIN_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Whether a chain is a business channel's (`channel-<id>`): its events are its members' only. */
export function isChannelChainName(name: string): boolean {
  return name.startsWith(CHANNEL_CHAIN_PREFIX);
}

/**
 * The scope of a chain's events in the entity index: a channel's chain is its own scope (its members alone read it),
 * every other chain is in the one scope any reader reads (null). A trace reads only the scopes its caller reads.
 */
export function entityScopeOf(chainName: string): string | null {
  return isChannelChainName(chainName) ? chainName : null;
}

/** Whether a string could name a chain at all (used to answer 404 without a read). */
export function isWellFormedChainName(name: string): boolean {
  return CHAIN_NAME_PATTERN.test(name);
}

/** Throws the 400 of docs/rules.md, "Errors" when a client may not create a Sub-Chain with this name. */
export function assertCreatableSubChainName(name: string, options: { allowChannel?: boolean } = {}): void {
  if (!CHAIN_NAME_PATTERN.test(name)) {
    throw new InvalidChainNameError(`Invalid chain name '${name}': use 1 to 64 of the characters A-Z a-z 0-9 _ -`);
  }
  const folded = name.toLowerCase();
  if (folded === MAIN_CHAIN) {
    throw new InvalidChainNameError(`'${name}' is reserved for the Main Chain (in any case)`);
  }
  if (!options.allowChannel && folded.startsWith(CHANNEL_CHAIN_PREFIX)) {
    throw new InvalidChainNameError(`Names starting with '${CHANNEL_CHAIN_PREFIX}' (in any case) are reserved for channels`);
  }
}
