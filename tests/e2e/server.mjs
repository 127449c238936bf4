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

// Polls fn() until it returns a truthy value; throws `what` after waitMs.
export async function until(what, fn, waitMs = 15000) {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

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

// Every server process started here, killed if the runner exits early.
const live = new Set();
process.on("exit", () => { for (const p of live) p.kill("SIGKILL"); });

const running = (proc) => proc.exitCode === null && proc.signalCode === null;

function launch(port, conf) {
  const proc = spawn(bin, ["-a", "127.0.0.1", "-p", String(port), "-c", conf], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  live.add(proc);
  const exited = new Promise((r) => proc.once("exit", (code, signal) => { live.delete(proc); r({ code, signal }); }));
  const run = { proc, exited, output: "" };
  proc.stdout.on("data", (d) => { run.output += d; });
  proc.stderr.on("data", (d) => { run.output += d; });
  return run;
}

// SIGTERM, then SIGKILL after 2 s. Resolves to { code, signal, killed } (killed: SIGKILL was needed).
async function halt(run) {
  let killed = false;
  let killer;
  if (running(run.proc)) {
    run.proc.kill("SIGTERM");
    killer = setTimeout(() => { killed = true; run.proc.kill("SIGKILL"); }, 2000);
  }
  const how = await run.exited;
  clearTimeout(killer);
  return { ...how, killed };
}

// extraConf(dir) returns config lines appended after `port: N`. Resolves to
// { port, dir, stop(), restart(), output() } once the server accepts connections.
// stop() (SIGTERM, SIGKILL after 2 s) removes the temp dir and resolves to how the process
// exited; restart() stops it the same way and starts it again on the same port and config,
// so on the same store dir, and resolves to how the old process exited.
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
  let run = null;
  const stop = async () => {
    const how = run ? await halt(run) : null;
    rmSync(dir, { recursive: true, force: true });
    return how;
  };
  const boot = async () => {
    run = launch(port, conf);
    const deadline = Date.now() + 5000;  // bounded startup wait
    while (Date.now() < deadline) {
      if (!running(run.proc)) {
        await run.exited;
        const err = new Error(`server exited during startup:\n${run.output}`);
        if (/Address already in use/.test(run.output) && run.output.includes(`:${port}`)) err.portLost = port;
        throw err;
      }
      if (await accepts(port)) return;
      await sleep(20);
    }
    throw new Error(`server did not accept on ${port} within 5 s:\n${run.output}`);
  };
  try {
    await boot();
  } catch (e) {
    await stop();
    throw e;
  }
  const restart = async () => {
    const how = await halt(run);
    await boot();  // on failure the caller's stop() still cleans up
    return how;
  };
  return { port, dir, stop, restart, output: () => run.output };
}
