/** Port helpers for the local stack. */
import { createServer } from 'node:net';

/**
 * A port the OS says is free right now on loopback, other than `avoid`. The OS often hands out a port it
 * just took back, so a port picked here for the gateway can come back for DynamoDB Local a moment later;
 * ports the caller has already promised elsewhere are passed in `avoid`.
 */
export async function freePort(avoid: readonly number[] = []): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const port = await anyFreePort();
    if (!avoid.includes(port)) return port;
  }
  throw new Error(`no free port outside ${avoid.join(', ')}`);
}

function anyFreePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/** Whether something could listen on host:port now. */
export function isPortFree(port: number, host: string): Promise<boolean> {
  return new Promise((answer) => {
    const server = createServer();
    server.unref();
    server.once('error', () => answer(false));
    server.listen(port, host, () => server.close(() => answer(true)));
  });
}

/** Whether something answers HTTP at `url` within `timeoutMs` (any status: a server is there). */
export async function answersHttp(url: string, timeoutMs: number): Promise<boolean> {
  try {
    await (await fetch(url, { signal: AbortSignal.timeout(timeoutMs) })).arrayBuffer();
    return true;
  } catch {
    return false;
  }
}
