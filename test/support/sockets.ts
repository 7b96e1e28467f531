/**
 * The TCP sockets a process and its descendants listen on, read from /proc (Linux): which addresses a local
 * stack can be reached on. `ss` is not on every machine; /proc is.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export interface Listening {
  pid: number;
  /** The process's name (its `comm`). */
  command: string;
  address: string;
  port: number;
}

/** `pid` and every process below it. */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(name)]);
    } catch {
      // gone meanwhile
    }
  }
  const tree: number[] = [];
  const visit = (p: number) => {
    tree.push(p);
    for (const child of children.get(p) ?? []) visit(child);
  };
  visit(pid);
  return tree;
}

/** A /proc/net/tcp{,6} address (hex, each 32-bit word in host byte order: little-endian here) as text. */
function address(hex: string): string {
  const words = hex.match(/.{8}/g)!.map((word) =>
    word
      .match(/../g)!
      .reverse()
      .map((b) => Number.parseInt(b, 16)),
  );
  if (words.length === 1) return words[0]!.join('.');
  const bytes = words.flat();
  if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) return `::ffff:${bytes.slice(12).join('.')}`;
  if (bytes.slice(0, 15).every((b) => b === 0)) return bytes[15] === 0 ? '::' : `::${bytes[15]!.toString(16)}`;
  return Array.from({ length: 8 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16)).join(':');
}

/** Every TCP socket in LISTEN state that one of `pids` holds open. */
export function listeningSockets(pids: readonly number[]): Listening[] {
  const owners = new Map<string, number>();
  for (const pid of pids) {
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) owners.set(m[1]!, pid);
      } catch {
        // closed meanwhile
      }
    }
  }
  const found: Listening[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const cells = line.trim().split(/\s+/);
      if (cells.length < 10 || cells[3] !== '0A') continue;
      const pid = owners.get(cells[9]!);
      if (pid === undefined) continue;
      const [hex, port] = cells[1]!.split(':');
      found.push({ pid, command: readFileSync(`/proc/${pid}/comm`, 'utf8').trim(), address: address(hex!), port: Number.parseInt(port!, 16) });
    }
  }
  return found;
}

/** Whether an address is this host's loopback only (127.0.0.0/8, ::1, or IPv4-mapped loopback). */
export const isLoopback = (address: string) => /^(::ffff:)?127\./.test(address) || address === '::1';
