/**
 * A TCP proxy in front of a real DynamoDB Local that can stop answering: `stall()` drops the connections in
 * flight and holds every new one open without a byte of answer, as a hung dependency or a black-holed network
 * does; `resume()` lets traffic through again. Nothing sent while stalled ever reaches DynamoDB, so a write
 * the service gave up on cannot land later behind the test's back.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface StallProxy {
  endpoint: string;
  stall(): void;
  resume(): void;
  close(): Promise<void>;
}

export async function startStallProxy(upstream: string): Promise<StallProxy> {
  const target = new URL(upstream);
  const live = new Set<Socket>();
  const held = new Set<Socket>();
  let stalled = false;

  const server: Server = createServer((client) => {
    if (stalled) {
      held.add(client);
      client.on('data', () => undefined); // read and drop: never forwarded
      client.on('error', () => undefined);
      client.on('close', () => held.delete(client));
      return;
    }
    const server = connect(Number(target.port), target.hostname);
    for (const socket of [client, server]) {
      live.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        live.delete(socket);
        client.destroy();
        server.destroy();
      });
    }
    client.pipe(server);
    server.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    stall() {
      stalled = true;
      for (const socket of live) socket.destroy();
    },
    resume() {
      stalled = false;
      for (const socket of held) socket.destroy();
    },
    async close() {
      for (const socket of [...live, ...held]) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
