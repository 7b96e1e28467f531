/**
 * The most blocks each chain was seen to hold by this instance. A chain only grows (no chain is ever removed or
 * cut back), so a read of its first N blocks, N at most what was seen, needs no read of its head: its blocks are
 * written and never change. Held per instance, never shared: each instance learns from its own strong reads.
 */
export interface SizesSeen {
  /** A chain was read (strongly) to hold `size` blocks. */
  note(chainName: string, size: number): void;
  /** Whether the chain is known to hold at least `size` blocks. */
  covers(chainName: string, size: number): boolean;
}

export function sizesSeen(most = 10_000): SizesSeen {
  const sizes = new Map<string, number>();
  return {
    note(chainName, size) {
      if (sizes.size >= most && !sizes.has(chainName)) sizes.clear();
      sizes.set(chainName, Math.max(sizes.get(chainName) ?? 0, size));
    },
    covers: (chainName, size) => size <= (sizes.get(chainName) ?? 0),
  };
}
