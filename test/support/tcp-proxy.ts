import { type Server, type Socket, createServer, connect } from "node:net";

// A TCP proxy the network-cut tests control: it forwards 127.0.0.1:<port> to a broker,
// and `cut()` destroys every connection through it and refuses new ones (as a network that
// went away) until `restore()`.

/** A running proxy in front of `target` (host:port). */
export interface TcpProxy {
  /** The port it listens on (127.0.0.1). */
  readonly port: number;
  /** Connections accepted so far. */
  readonly accepted: () => number;
  /** Connections open now. */
  readonly open: () => number;
  /** Drops every open connection (both sides reset) and refuses new ones. */
  cut(): void;
  /** Accepts and forwards again. */
  restore(): void;
  close(): Promise<void>;
}

/** Starts a proxy to `targetHost:targetPort` on a free local port. */
export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let cut = false;
  let accepted = 0;
  const server: Server = createServer((client) => {
    if (cut) {
      client.resetAndDestroy();
      return;
    }
    accepted++;
    const upstream = connect(targetPort, targetHost);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the proxy has no TCP address");
  const dropAll = () => {
    cut = true;
    for (const [client, upstream] of pairs) {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    }
    pairs.clear();
  };
  return {
    port: address.port,
    accepted: () => accepted,
    open: () => pairs.size,
    cut: dropAll,
    restore() {
      cut = false;
    },
    async close() {
      dropAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
