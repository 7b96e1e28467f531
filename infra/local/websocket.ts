/**
 * The local stand-in for API Gateway's WebSocket API: upgrades `/ws`, invokes the $connect, $default
 * and $disconnect handler with API Gateway's WebSocket event shape (a $default answer body is sent back,
 * as a route response does), and serves the management API's `POST/GET/DELETE /@connections/{id}` so the
 * unmodified @aws-sdk/client-apigatewaymanagementapi can push to these clients.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { steadyNow } from '../../shared/clock.ts';

import { type Gateway, refusal } from './gateway.ts';

export type WebSocketHandler = (
  event: Record<string, unknown>,
  context: Record<string, unknown>,
) => Promise<{ statusCode?: number; body?: string } | undefined>;

interface Client {
  socket: WebSocket;
  connectedAt: number;
  /** On `steadyNow`'s clock: a wall clock stepped forward must not close a busy connection as idle. */
  lastActiveAt: number;
  sourceIp: string;
  userAgent: string;
}

/**
 * The WebSocket API's quotas as API Gateway enforces them (docs/sim.md, "Quotas", gives the source): a frame
 * of at most 32 KB and a message of at most 128 KB, else the connection is closed with 1009; a connection
 * lives at most 2 hours, and one with no message either way for 10 minutes is closed (protocol pings are
 * not messages: API Gateway does not answer them); `@connections` refuses data over 128 KB with 413.
 */
export const WEBSOCKET_QUOTAS = { frameBytes: 32 * 1024, messageBytes: 128 * 1024, lifetimeMs: 2 * 3_600_000, idleMs: 10 * 60_000 } as const;

/** The close code for a connection API Gateway ends (its idle timeout or lifetime): going away. */
const GOING_AWAY = 1001;

/**
 * Reads WebSocket frame headers from the raw bytes of one direction of a connection, chunk by chunk,
 * skipping payloads: told each frame's payload length (RFC 6455, section 5.2).
 */
export function frameScanner(onFrame: (frame: { opcode: number; fin: boolean; length: number }) => void): (chunk: Buffer) => void {
  let header: Buffer = Buffer.alloc(0);
  let skip = 0;
  return (chunk: Buffer) => {
    let rest: Buffer = chunk;
    while (rest.length > 0) {
      if (skip > 0) {
        const n = Math.min(skip, rest.length);
        skip -= n;
        rest = rest.subarray(n);
        continue;
      }
      header = header.length ? Buffer.concat([header, rest]) : rest;
      rest = Buffer.alloc(0);
      if (header.length < 2) return;
      const len7 = header[1]! & 0x7f;
      const size = 2 + (len7 === 126 ? 2 : len7 === 127 ? 8 : 0) + ((header[1]! & 0x80) !== 0 ? 4 : 0);
      if (header.length < size) return;
      const length = len7 === 126 ? header.readUInt16BE(2) : len7 === 127 ? Number(header.readBigUInt64BE(2)) : len7;
      onFrame({ opcode: header[0]! & 0x0f, fin: (header[0]! & 0x80) !== 0, length });
      rest = header.subarray(size);
      header = Buffer.alloc(0);
      skip = length;
    }
  };
}

/** Whether a request came from this machine (127.0.0.0/8 or ::1, IPv4-mapped or not). */
export function fromLoopback(req: Pick<IncomingMessage, 'socket'>): boolean {
  const address = req.socket.remoteAddress ?? '';
  return address === '::1' || /^(::ffff:)?127\./.test(address);
}

/** Sends a text message as API Gateway does: in frames of at most 32 KB. */
function sendFramed(ws: WebSocket, text: string, frameBytes: number): void {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= frameBytes) {
    ws.send(bytes, { binary: false });
    return;
  }
  for (let at = 0; at < bytes.length; at += frameBytes) {
    ws.send(bytes.subarray(at, at + frameBytes), { binary: false, fin: at + frameBytes >= bytes.length });
  }
}

export interface LocalWebSocketApi {
  /** Answers `/@connections/…` requests; false when the request is not one. */
  handleManagement(req: IncomingMessage, res: ServerResponse): boolean;
  close(): Promise<void>;
}

function wsEvent(
  routeKey: string,
  eventType: string,
  connectionId: string,
  client: Pick<Client, 'sourceIp' | 'userAgent' | 'connectedAt'>,
  domainName: string,
  extra: Record<string, unknown> = {},
) {
  return {
    requestContext: {
      routeKey,
      eventType,
      connectionId,
      connectedAt: client.connectedAt,
      domainName,
      stage: '$default',
      apiId: 'local',
      requestId: randomUUID(),
      messageDirection: 'IN',
      requestTimeEpoch: Date.now(),
      identity: { sourceIp: client.sourceIp, userAgent: client.userAgent },
    },
    isBase64Encoded: false,
    ...extra,
  };
}

/** Messages of one connection that may wait for the ones before them; past it the connection is closed (1008). */
const MAX_QUEUED_MESSAGES = 100;

const lambdaContext = (name: string) => ({ functionName: name, awsRequestId: randomUUID(), getRemainingTimeInMillis: () => 29_000 });

export function attachWebSocketApi(
  server: Server,
  options: {
    path: string;
    handler: WebSocketHandler;
    quotas?: Partial<typeof WEBSOCKET_QUOTAS>;
    /**
     * Where the management API is served: `<managementPath>/@connections/{id}` (the functions' endpoint's path). The
     * local stack makes it a secret of each start: a reverse proxy on this machine makes every caller loopback.
     */
    managementPath?: string;
  },
): LocalWebSocketApi {
  const quotas = { ...WEBSOCKET_QUOTAS, ...options.quotas };
  const clients = new Map<string, Client>();
  const wss = new WebSocketServer({ noServer: true, maxPayload: quotas.messageBytes });

  server.on('upgrade', async (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== options.path) {
      socket.end(refusal(404));
      return;
    }
    // API Gateway's connection ids: 12 random bytes, base64.
    const connectionId = randomBytes(12).toString('base64');
    const client = {
      connectedAt: Date.now(),
      sourceIp: req.socket.remoteAddress?.replace(/^::ffff:/, '') ?? '127.0.0.1',
      userAgent: String(req.headers['user-agent'] ?? ''),
    };
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : v]));
    // As API Gateway's $connect event has them: the last value of each parameter, and every value.
    const query = Object.fromEntries(url.searchParams);
    const multi: Record<string, string[]> = {};
    for (const [key, value] of url.searchParams) (multi[key] ??= []).push(value);
    const domain = String(req.headers.host ?? 'localhost');
    let result;
    try {
      result = await options.handler(
        wsEvent('$connect', 'CONNECT', connectionId, client, domain, {
          headers,
          ...(Object.keys(query).length ? { queryStringParameters: query, multiValueQueryStringParameters: multi } : {}),
        }),
        lambdaContext('ws'),
      );
    } catch {
      result = { statusCode: 500 };
    }
    const status = result?.statusCode ?? 200;
    if (status !== 200) {
      socket.end(refusal(status));
      return;
    }
    // The client went away while $connect ran: the connection never opens, and the upgrade would drop the socket
    // without a word. $connect recorded it (and took one of its key's slots): $disconnect, as for any connection that
    // ends, or the slot stayed taken for the record's whole life (red team: five aborted handshakes locked a key out).
    if (socket.destroyed || !socket.readable || !socket.writable) {
      socket.destroy();
      void options.handler(wsEvent('$disconnect', 'DISCONNECT', connectionId, client, domain), lambdaContext('ws')).catch(() => undefined);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const entry: Client = { ...client, socket: ws, lastActiveAt: steadyNow() };
      clients.set(connectionId, entry);
      // A frame over 32 KB closes the connection (1009), even within a message under 128 KB: the frame
      // headers are read from the raw bytes as they come, beside the WebSocket library's own parsing.
      const scan = frameScanner(({ length }) => {
        if (length > quotas.frameBytes && ws.readyState === ws.OPEN) ws.close(1009, 'Frame too big');
      });
      if (head.length) scan(head);
      socket.on('data', scan);
      // API Gateway ends a connection at 2 hours, and one idle for 10 minutes (no message either way).
      const lifetime = setTimeout(() => ws.close(GOING_AWAY, 'Connection lifetime reached'), quotas.lifetimeMs);
      const idle = setInterval(
        () => {
          if (steadyNow() - entry.lastActiveAt >= quotas.idleMs) ws.close(GOING_AWAY, 'Idle connection timeout');
        },
        Math.max(50, Math.min(quotas.idleMs / 4, 30_000)),
      );
      lifetime.unref();
      idle.unref();
      ws.once('close', () => {
        clearTimeout(lifetime);
        clearInterval(idle);
      });
      // A bad frame (invalid UTF-8, a message over 128 KiB, a protocol error) closes this connection with
      // the code the protocol names for it (1007, 1009, 1002); it must never reach the process.
      ws.on('error', () => undefined);
      // One connection's messages are handled one after another, in the order they came: a subscribe
      // then an unsubscribe leaves the connection unsubscribed, and a flood on one connection occupies
      // one instance at a time, not the whole pool.
      let queue: Promise<void> = Promise.resolve();
      let waiting = 0;
      ws.on('message', (data, isBinary) => {
        entry.lastActiveAt = steadyNow();
        if (waiting >= MAX_QUEUED_MESSAGES) {
          // API Gateway throttles a client that outruns its integration; here it is told, then cut off.
          ws.close(1008, 'Too many messages waiting on this connection');
          return;
        }
        waiting += 1;
        // Made as the message arrives, as API Gateway's is: its requestTimeEpoch is the arrival, however long
        // the messages before it keep it waiting (the ws function counts a connection's rate by it).
        const event = wsEvent('$default', 'MESSAGE', connectionId, client, domain, {
          body: isBinary ? Buffer.from(data as Buffer).toString('base64') : data.toString(),
          isBase64Encoded: isBinary,
        });
        queue = queue.then(async () => {
          try {
            if (ws.readyState !== ws.OPEN) return;
            const answer = await options.handler(event, lambdaContext('ws'));
            if (answer?.body !== undefined && ws.readyState === ws.OPEN) {
              entry.lastActiveAt = steadyNow();
              sendFramed(ws, answer.body, quotas.frameBytes);
            }
          } catch {
            // API Gateway answers an integration failure with its own message and keeps the connection.
            if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ message: 'Internal server error', connectionId, requestId: randomUUID() }));
          } finally {
            waiting -= 1;
          }
        });
      });
      ws.on('close', () => {
        clients.delete(connectionId);
        void options.handler(wsEvent('$disconnect', 'DISCONNECT', connectionId, client, domain), lambdaContext('ws')).catch(() => undefined);
      });
    });
  });

  return {
    handleManagement(req, res) {
      const url = req.url ?? '';
      const prefix = `${options.managementPath ?? ''}/@connections/`;
      if (!url.startsWith(prefix)) return false;
      // The id and nothing after it but a query (`<id>/../..` is not the management API: npm run sim checks the
      // caller's role on the normalized path, which that would have left).
      const match = /^([^/?]+)(\?.*)?$/.exec(url.slice(prefix.length));
      if (!match) return false;
      const answer = (status: number, body?: unknown, headers: Record<string, string> = {}) => {
        const text = body === undefined ? '' : JSON.stringify(body);
        res.writeHead(status, {
          'Content-Type': 'application/json',
          'Content-Length': String(Buffer.byteLength(text)),
          'Cache-Control': 'no-store',
          ...headers,
        });
        res.end(text);
      };
      let connectionId: string;
      try {
        connectionId = decodeURIComponent(match[1]!);
      } catch {
        // A malformed escape (`%E0`) threw inside the gateway's handler: the whole stack stopped.
        req.resume();
        answer(400, { message: 'Invalid connection id' }, { 'x-amzn-ErrorType': 'BadRequestException' });
        return true;
      }
      const client = clients.get(connectionId);
      // Only this machine's processes (the functions) may call it. On AWS the management API is signed with IAM
      // credentials; here it shares the gateway's port, which SVC_HOST=0.0.0.0 opens to other machines: anyone there
      // could have pushed forged events to a connection, closed it, or read its address (red team).
      if (!fromLoopback(req)) {
        req.resume();
        answer(403, { message: 'Forbidden' }, { 'x-amzn-ErrorType': 'ForbiddenException' });
        return true;
      }
      if (!client || client.socket.readyState !== client.socket.OPEN) {
        req.resume();
        answer(410, { message: 'Gone' }, { 'x-amzn-ErrorType': 'GoneException' });
        return true;
      }
      if (req.method === 'POST') {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const data = Buffer.concat(chunks);
          if (data.length > quotas.messageBytes) {
            answer(413, { message: 'Request Entity Too Large' }, { 'x-amzn-ErrorType': 'PayloadTooLargeException' });
            return;
          }
          client.lastActiveAt = steadyNow();
          sendFramed(client.socket, data.toString('utf8'), quotas.frameBytes);
          answer(200);
        });
      } else if (req.method === 'GET') {
        req.resume();
        answer(200, {
          ConnectedAt: new Date(client.connectedAt).toISOString(),
          Identity: { SourceIp: client.sourceIp, UserAgent: client.userAgent },
          LastActiveAt: new Date(client.lastActiveAt).toISOString(),
        });
      } else if (req.method === 'DELETE') {
        req.resume();
        client.socket.close(1000);
        answer(204);
      } else {
        req.resume();
        answer(405, { message: 'Method not allowed' });
      }
      return true;
    },
    async close() {
      for (const { socket } of clients.values()) socket.terminate();
      await new Promise<void>((done) => wss.close(() => done()));
    },
  };
}

/** Where the management API is served for functions given `endpoint`: its path as the SDK joins it (`/stage/` makes
 * `/stage//@connections/…`; none, or `/`, makes `/@connections/…`). */
export function managementPathOf(endpoint: string): string {
  const path = new URL(endpoint).pathname;
  return path === '/' ? '' : path;
}

/**
 * The WebSocket API on a gateway, as API Gateway serves it beside the HTTP API: connections at /ws, the
 * `@connections` management API answered before the routes, and closed with the gateway.
 */
export function serveWebSocketApi(gateway: Gateway, handler: WebSocketHandler, managementPath?: string): LocalWebSocketApi {
  const webSocketApi = attachWebSocketApi(gateway.server, { path: '/ws', handler, ...(managementPath ? { managementPath } : {}) });
  gateway.intercept = webSocketApi.handleManagement;
  const closeGateway = gateway.close;
  gateway.close = async () => {
    await webSocketApi.close();
    await closeGateway();
  };
  return webSocketApi;
}
