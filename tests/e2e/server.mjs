// Starts the server binary in PEREGRINE_SERVER_BIN for a nats.js test file, the way the
// integration tests start it: a free loopback port, a temp config, a bounded wait.
//
// Environment:
//   PEREGRINE_SERVER_BIN           binary under test (meson sets it)
//   PEREGRINE_SERVER_BIN_OVERRIDE  any other binary, takes precedence
//   PEREGRINE_E2E_REF=1            run against the reference nats-server (from PATH, or
//                                  /usr/sbin/nats-server) instead: validates the tests themselves.
//                                  Tests of features 2.9.10 lacks check `isReference` and skip.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import net from "node:net";

function referenceBinary() {
  try {
    return execFileSync("sh", ["-c", "command -v nats-server"], { encoding: "utf8" }).trim()
      || "/usr/sbin/nats-server";
  } catch {
    return "/usr/sbin/nats-server";
  }
}

export const bin = process.env.PEREGRINE_E2E_REF === "1"
  ? referenceBinary()
  : process.env.PEREGRINE_SERVER_BIN_OVERRIDE || process.env.PEREGRINE_SERVER_BIN;
// True when the binary under test is nats-server (2.9.10 lacks the newer consumer features).
export const isReference = !!bin && /(^|\/)nats-server$/.test(bin);
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Ports handed out by this process: the kernel may offer a port again once its probe
// socket closed, and a cluster port picked earlier (not listened on until its server
// starts) must not become the next server's client port.
const handedOut = new Set();

function probePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export async function freePort() {
  for (;;) {
    const port = await probePort();
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}

function accepts(port) {
  return new Promise((resolve) => {
    const s = net.connect({ host: "127.0.0.1", port }, () => { s.destroy(); resolve(true); });
    s.once("error", () => resolve(false));
  });
}

// extraConf(dir) returns config lines appended after `port: N`. Resolves to
// { port, stop() } once the server accepts connections.
export async function startServer(extraConf = () => "") {
  // Another process may take the probed client port before the server binds it: pick again.
  for (let attempt = 1; ; ++attempt) {
    const port = await freePort();
    try {
      return await startOn(port, extraConf);
    } catch (e) {
      const lost = e.portLost === port;
      if (!lost || attempt >= 3) throw e;
    }
  }
}

async function startOn(port, extraConf) {
  const dir = mkdtempSync(join(tmpdir(), "pg-e2e-"));
  const conf = join(dir, "server.conf");
  writeFileSync(conf, `port: ${port}\n${extraConf(dir)}`);
  const server = spawn(bin, ["-a", "127.0.0.1", "-p", String(port), "-c", conf], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  // Never leak the server if the runner exits early.
  process.on("exit", () => { if (server.exitCode === null) server.kill("SIGKILL"); });
  let output = "";
  server.stdout.on("data", (d) => { output += d; });
  server.stderr.on("data", (d) => { output += d; });
  const stop = async () => {
    if (server.exitCode === null) {
      const exited = new Promise((r) => server.once("exit", r));
      server.kill("SIGTERM");
      const killer = setTimeout(() => server.kill("SIGKILL"), 2000);
      await exited;
      clearTimeout(killer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 5000;  // bounded startup wait
  while (Date.now() < deadline) {
    if (server.exitCode !== null) {
      await stop();
      const err = new Error(`server exited during startup:\n${output}`);
      if (/Address already in use/.test(output) && output.includes(`:${port}`)) err.portLost = port;
      throw err;
    }
    if (await accepts(port)) return { port, stop };
    await sleep(20);
  }
  await stop();
  throw new Error(`server did not accept on ${port} within 5 s:\n${output}`);
}
