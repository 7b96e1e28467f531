/**
 * The chains as C2SP transparency logs: a signed-note checkpoint per chain and its tiles, computed from
 * the same RFC 6962 tree (leaves = block hashes) that the JSON checkpoint and the proofs use, so both
 * views always agree on every root.
 *
 * Costs: a full tile never changes, so it is computed once (from the tree nodes the blocks already
 * hold: 256 block items) and kept in the tile store; every later read is one item, with no head read.
 * Partial tiles are computed per read from at most 255 block items plus the head. Blocks are read
 * strongly consistent: the newest ones were committed moments before the head said the tree has them.
 */
import { BadRequestError, InvalidChainNameError, NotFoundError } from '../errors.ts';
import { requireChainHead } from '../ledger/ledger.ts';
import { isWellFormedChainName } from '../ledger/names.ts';
import type { LedgerRepository } from '../ledger/repository.ts';
import { ensureTree, headRoot, readNodes } from '../ledger/tree.ts';
import type { Signer, WitnessedCheckpoints } from '../ledger/proofs.ts';
import { checkpointText, signNote, verifierKey } from './note.ts';
import { TILE_WIDTH, TilePathError, availableWidth, encodeEntryBundle, parseTilePath, tileNodes, tilePath, type TileRef } from './tiles.ts';

/** Where full tiles are kept once computed. Keys are tile paths (`tile/0/x001/234`); values never change. */
export interface TileStore {
  get(chainName: string, path: string): Promise<Buffer | undefined>;
  /** Stores a full tile; storing the same tile twice (two first readers at once) is harmless. */
  put(chainName: string, path: string, bytes: Buffer): Promise<void>;
}

export interface TlogOptions {
  repository: LedgerRepository;
  tiles: TileStore;
  signer: () => Promise<Signer>;
  /** The log's key name and origin prefix; a chain's origin is `<origin>/<chain>`. Given the node id. */
  origin: (nodeId: string) => string;
  /** With witnesses: the newest checkpoint they cosigned, which the checkpoint route then serves. */
  witnessed?: Pick<WitnessedCheckpoints, 'latest'>;
}

export interface TileAnswer {
  bytes: Buffer;
  /** Full tiles never change (cache them for good); partial ones are replaced as the chain grows. */
  full: boolean;
}

function assertChainName(chainName: string): void {
  if (!isWellFormedChainName(chainName)) {
    throw new InvalidChainNameError(`Invalid chain name '${chainName}': chain names are 1 to 64 of the characters A-Z a-z 0-9 _ -`);
  }
}

export function createTlog({ repository, tiles, signer, origin, witnessed }: TlogOptions) {
  async function keyName(): Promise<{ name: string; node: Signer }> {
    const node = await signer();
    return { name: origin(node.nodeId), node };
  }

  async function signedNote(chainName: string, size: number, rootHex: string): Promise<string> {
    const { name, node } = await keyName();
    const text = checkpointText({ origin: `${name}/${chainName}`, size, root: Buffer.from(rootHex, 'hex') });
    return signNote(text, name, node.publicKey, (bytes) => node.sign(bytes));
  }

  async function compute(chainName: string, tile: TileRef): Promise<Buffer> {
    if (tile.level === 'entries') {
      const first = tile.index * TILE_WIDTH;
      const indices = Array.from({ length: tile.width }, (_, i) => first + i);
      const data = await repository.readTreeData(chainName, indices, true);
      return encodeEntryBundle(
        indices.map((index) => {
          const block = data.get(index);
          if (!block) throw new Error(`block ${index} of '${chainName}' is missing: the entry bundle cannot be built`);
          return Buffer.from(block.hash, 'hex');
        }),
      );
    }
    const nodes = tileNodes(tile);
    const node = await readNodes(repository, chainName, nodes, true);
    return Buffer.concat(nodes.map((n) => node(n.level, n.index)));
  }

  return {
    /** The verifier key of the node's checkpoints: `<name>+<key id>+<base64 key>`. */
    async verifierKey(): Promise<string> {
      const { name, node } = await keyName();
      return verifierKey(name, node.publicKey);
    },

    /**
     * The chain's checkpoint as a signed note: `<origin>/<chain>`, tree size, base64 root. With witnesses,
     * the newest one they cosigned, with their cosignatures (as Tessera publishes only witnessed
     * checkpoints); the head's until they have cosigned one.
     */
    async checkpoint(chainName: string): Promise<string> {
      assertChainName(chainName);
      const head = await ensureTree(repository, await requireChainHead(repository, chainName));
      const cosigned = await witnessed?.latest(head.chainName);
      if (cosigned && cosigned.size <= head.headIndex + 1) {
        return (await signedNote(head.chainName, cosigned.size, Buffer.from(cosigned.root, 'base64').toString('hex'))) + cosigned.lines.join('');
      }
      return signedNote(head.chainName, head.headIndex + 1, headRoot(head));
    },

    /** The signed note of a chain's tree at a size whose root the caller computed. */
    signedNote,

    /** A hash tile or entry bundle by its path below `tile/` (`0/x001/234.p/7`, `entries/005`). */
    async tile(chainName: string, rawPath: string): Promise<TileAnswer> {
      assertChainName(chainName);
      let tile: TileRef;
      try {
        tile = parseTilePath(rawPath);
      } catch (error) {
        if (!(error instanceof TilePathError)) throw error;
        throw error.kind === 'not-found' ? new NotFoundError(error.message) : new BadRequestError(`Malformed tile path '${rawPath}': ${error.message}`);
      }
      const fullPath = tilePath({ ...tile, width: TILE_WIDTH });
      const full = tile.width === TILE_WIDTH;
      if (full) {
        const kept = await tiles.get(chainName, fullPath);
        if (kept) return { bytes: kept, full };
      }
      const head = await ensureTree(repository, await requireChainHead(repository, chainName));
      const available = availableWidth(tile, head.headIndex + 1);
      if (available < tile.width) {
        throw new NotFoundError(
          available === 0
            ? `'${chainName}' has ${head.headIndex + 1} blocks: its tree has no ${tilePath(tile)}`
            : `'${chainName}' has ${head.headIndex + 1} blocks: ${tilePath(tile)} is ${available} wide so far`,
        );
      }
      if (!full && available === TILE_WIDTH) {
        // A partial view of a tile that has filled up since: the first W hashes of the full tile.
        const kept = await tiles.get(chainName, fullPath);
        if (kept) return { bytes: prefixOf(kept, tile), full };
      }
      const bytes = await compute(chainName, { ...tile, width: full ? TILE_WIDTH : tile.width });
      if (full) await tiles.put(chainName, fullPath, bytes);
      return { bytes, full };
    },
  };
}

/** The first `tile.width` entries of a full tile's bytes. */
function prefixOf(bytes: Buffer, tile: TileRef): Buffer {
  if (tile.level !== 'entries') return bytes.subarray(0, tile.width * 32);
  let at = 0;
  for (let i = 0; i < tile.width; i += 1) at += 2 + bytes.readUInt16BE(at);
  return bytes.subarray(0, at);
}

export type Tlog = ReturnType<typeof createTlog>;
