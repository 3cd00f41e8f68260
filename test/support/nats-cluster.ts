import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

// A 3-node NATS cluster with JetStream on localhost, for the cluster process test: its own
// ports (the first free from 14222 for clients, 16222 for routes) and store directories
// under a temp directory, killed and removed by `stop()`.

const natsServer = process.env.ERRAND_NATS_SERVER ?? "/usr/sbin/nats-server";

// Only for choosing ports before any node starts: probing a starting node this way would
// hold its port for an instant, and a node that binds in that instant exits.
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function freePorts(from: number, count: number, taken: Set<number>): Promise<number[]> {
  const ports: number[] = [];
  for (let port = from; ports.length < count && port < from + 1000; port++) {
    if (!taken.has(port) && (await portFree(port))) ports.push(port);
  }
  for (const port of ports) taken.add(port);
  return ports;
}

/** One node: its name, client port and process. */
export interface ClusterNode {
  readonly name: string;
  readonly port: number;
  readonly process: ChildProcess;
  /** The end of what it logged (nats-server logs to stderr), for an error that names its cause. */
  log: string;
}

function startNode(name: string, port: number, config: string): ClusterNode {
  const child = spawn(natsServer, ["-c", config], { stdio: ["ignore", "ignore", "pipe"] });
  const node: ClusterNode = { name, port, process: child, log: "" };
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    node.log = (node.log + chunk).slice(-4_000);
  });
  return node;
}

/** Starts three nats-server processes in one cluster; resolves once all three listen. */
export async function startNatsCluster() {
  const dir = await mkdtemp(join(tmpdir(), "errand-nats-"));
  const taken = new Set<number>();
  const clients = await freePorts(14222, 3, taken);
  const routes = await freePorts(16222, 3, taken);
  const nodes: ClusterNode[] = [];
  for (let i = 0; i < 3; i++) {
    const name = `n${i + 1}`;
    const config = join(dir, `${name}.conf`);
    await writeFile(
      config,
      `server_name: ${name}
listen: 127.0.0.1:${clients[i]}
jetstream { store_dir: "${join(dir, name)}" }
cluster {
  name: errand_test
  listen: 127.0.0.1:${routes[i]}
  routes: [${routes.filter((_, j) => j !== i).map((p) => `nats-route://127.0.0.1:${p}`).join(", ")}]
}
`,
    );
    nodes.push(startNode(name, clients[i]!, config));
  }
  const cluster = {
    nodes,
    /** Every node's URL, comma-separated, as JetStreamQueue's `servers` takes them. */
    servers: nodes.map((n) => `nats://127.0.0.1:${n.port}`).join(","),
    /** SIGKILLs the node named `name`. */
    kill(name: string): Promise<void> {
      const node = nodes.find((n) => n.name === name)!;
      return new Promise((resolve) => {
        if (node.process.exitCode !== null || node.process.signalCode !== null) return resolve();
        node.process.once("exit", () => resolve());
        node.process.kill("SIGKILL");
      });
    },
    async stop(): Promise<void> {
      await Promise.all(nodes.map((n) => this.kill(n.name)));
      await rm(dir, { recursive: true, force: true });
    },
  };
  const deadline = Date.now() + 20_000;
  for (const node of nodes) {
    while (!(await listening(node.port))) {
      const exited = node.process.exitCode !== null || node.process.signalCode !== null;
      if (exited || Date.now() > deadline) {
        await cluster.stop();
        const why = exited ? `exited (${node.process.exitCode ?? node.process.signalCode})` : "did not listen within 20 s";
        throw new Error(`nats-server ${node.name} on ${node.port} ${why}; its log ends:\n${node.log}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return cluster;
}
