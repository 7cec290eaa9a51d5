// The web page of `tinylm serve` (GET /, src/tinylm/serve/web/index.html) in headless Chromium:
// type a prompt, set the sampling controls, click Generate, and read the streamed text from the
// page. Node standard library only: Chromium is driven over --remote-debugging-pipe (the
// DevTools protocol as NUL-terminated JSON on file descriptors 3 and 4).
//
//   node tests/browser/page_test.mjs --tinylm build/release/tinylm [--model DIR]
//   node tests/browser/page_test.mjs --url http://127.0.0.1:8080
//   node tests/browser/page_test.mjs --mock            (tests/browser/mock_server.mjs)
// --screenshot PREFIX writes PREFIX-light.png and PREFIX-dark.png of the page at the end.
// --api-key KEY: the server wants this key (passed to tinylm serve too); the test types it
// into the page's key field.
//
// With --tinylm the test starts `tinylm serve --model DIR --port 0 --threads N` itself (N from
// --threads, default 1; 0 leaves the flag out), reads the port from the "listening on
// http://..." line, and stops it with SIGTERM at the end, the browser still connected (it must
// exit 0 within 10 s). Chromium: --chromium PATH, $CHROMIUM, or chromium on the PATH.
// Without --model it first writes a small random GPT-2 (`tinylm init --preset mini`, 11M
// parameters, 256 positions) into its temporary directory: tests/fixtures/gpt2/tiny has no
// tokenizer that fits its 1000-token vocabulary.
//
// Checks:
//  1. the page names the model of GET /v1/models;
//  2. the streamed text in #output equals the non-streamed POST /v1/completions of the same
//     prompt and parameters (temperature 0), and --expect TEXT when given;
//  3. the text appeared progressively (at least 2 distinct non-empty states of #output, seen
//     by a MutationObserver in separate callbacks) and #stats shows the token count (equal to
//     usage.completion_tokens), tokens/s and the time to the first token;
//     With --tinylm or --url, the Chat tab: two messages typed and sent, each streamed reply equal
//     to the non-streamed POST /v1/chat/completions of the conversation so far; New chat clears it;
//  4. a request the server rejects (temperature -1) shows the server's error message;
//  5. Stop ends a long generation, and the server counts it cancelled (tinylm_cancelled_total
//     in GET /metrics), unless it all arrived before the click;
//  6. with --mock instead of 5: the request the page sent, the API key field (the mock wants a key),
//     the Stop button (the server sees the stream's connection closed), and streams that end
//     in an error event or without their end; that a reload keeps the prompt and the controls.
// Exit codes: 0 pass, 77 skipped (no Chromium), 1 failure, 2 usage error.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

// ---------------------------------------------------------------------------------------------
// Arguments.
const opts = {
  tinylm: "", model: "", url: "", mock: false, chromium: "", prompt: "The quick brown fox",
  maxTokens: 64, expect: null, timeout: 60, threads: "1", verbose: false, screenshot: "", apiKey: "",
};
{
  const a = process.argv.slice(2);
  const value = (i) => {
    if (i + 1 >= a.length) usage(`${a[i]} needs a value`);
    return a[i + 1];
  };
  for (let i = 0; i < a.length; i++) {
    switch (a[i]) {
      case "--tinylm": opts.tinylm = value(i++); break;
      case "--model": opts.model = value(i++); break;
      case "--url": opts.url = value(i++).replace(/\/+$/, ""); break;
      case "--mock": opts.mock = true; break;
      case "--chromium": opts.chromium = value(i++); break;
      case "--prompt": opts.prompt = value(i++); break;
      case "--max-tokens": opts.maxTokens = Number(value(i++)); break;
      case "--expect": opts.expect = value(i++); break;
      case "--timeout": opts.timeout = Number(value(i++)); break;
      case "--threads": opts.threads = value(i++); break;
      case "--verbose": case "-v": opts.verbose = true; break;
      case "--screenshot": opts.screenshot = value(i++); break;
      case "--api-key": opts.apiKey = value(i++); break;
      case "--help": case "-h":
        process.stdout.write(fs.readFileSync(fileURLToPath(import.meta.url), "utf8")
          .split("\n").filter((l) => l.startsWith("//")).map((l) => l.slice(3)).join("\n") + "\n");
        process.exit(0);
      default: usage(`unknown argument ${a[i]}`);
    }
  }
  if ([opts.tinylm, opts.url, opts.mock].filter(Boolean).length !== 1) {
    usage("give exactly one of --tinylm PATH, --url URL or --mock");
  }
  if (!(Number.isInteger(opts.maxTokens) && opts.maxTokens >= 2)) usage("--max-tokens must be >= 2");
  if (!(opts.timeout > 0)) usage("--timeout must be positive (seconds)");
}
function usage(msg) {
  process.stderr.write(`page_test: ${msg}\nusage: node page_test.mjs (--tinylm PATH [--model DIR] | ` +
    `--url URL | --mock) [--chromium PATH] [--prompt TEXT] [--max-tokens N] [--expect TEXT] ` +
    `[--timeout S] [--threads N] [--api-key KEY] [--screenshot PREFIX] [--verbose]\n`);
  process.exit(2);
}

const log = (...m) => { if (opts.verbose) process.stderr.write(`page_test: ${m.join(" ")}\n`); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// The wait for one of the real server's generations: slow under the sanitizers, with another
// test running beside this one.
const generationMs = 60000;
class Failure extends Error {}
const fail = (msg) => { throw new Failure(msg); };

// ---------------------------------------------------------------------------------------------
// Chromium.
function findChromium() {
  const candidates = [opts.chromium, process.env.CHROMIUM, process.env.CHROME_PATH].filter(Boolean);
  if (candidates.length) return candidates.find((p) => isExecutable(p)) || null;
  const dirs = (process.env.PATH || "/usr/bin").split(":");
  for (const name of ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]) {
    for (const d of [...dirs, "/usr/bin"]) {
      const p = path.join(d, name);
      if (isExecutable(p)) return p;
    }
  }
  return null;
}
function isExecutable(p) {
  try { fs.accessSync(p, fs.constants.X_OK); return fs.statSync(p).isFile(); } catch { return false; }
}

// The DevTools protocol over the pipe: commands with ids, events to listeners.
class Cdp {
  constructor(out, inp) {
    this.out = out; this.nextId = 1; this.pending = new Map(); this.listeners = new Set();
    this.closed = null;
    let buf = Buffer.alloc(0);
    inp.on("data", (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      let end;
      while ((end = buf.indexOf(0)) >= 0) {
        const text = buf.subarray(0, end).toString("utf8");
        buf = buf.subarray(end + 1);
        let msg;
        try { msg = JSON.parse(text); } catch { continue; }
        this.dispatch(msg);
      }
    });
    const closed = () => {
      this.closed = "the DevTools pipe closed (Chromium exited?)";
      for (const { reject } of this.pending.values()) reject(new Failure(this.closed));
      this.pending.clear();
    };
    inp.on("close", closed);
    inp.on("error", closed);
    out.on("error", closed);
  }
  dispatch(msg) {
    if (msg.id !== undefined) {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new Failure(`${p.method}: ${msg.error.message} ${msg.error.data ?? ""}`.trim()));
      else p.resolve(msg.result);
    } else {
      for (const fn of this.listeners) fn(msg);
    }
  }
  send(method, params = {}, sessionId = undefined) {
    if (this.closed) return Promise.reject(new Failure(this.closed));
    const id = this.nextId++;
    const msg = { id, method, params };
    if (sessionId) msg.sessionId = sessionId;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      this.out.write(JSON.stringify(msg) + "\0");
    });
  }
  on(fn) { this.listeners.add(fn); return () => this.listeners.delete(fn); }
}

// One page (a target attached in flat mode) and what the test does with it.
class Page {
  constructor(cdp, sessionId) { this.cdp = cdp; this.sessionId = sessionId; }
  send(method, params) { return this.cdp.send(method, params, this.sessionId); }
  async eval(expression) {
    const r = await this.send("Runtime.evaluate",
                              { expression, returnByValue: true, awaitPromise: true, userGesture: true });
    if (r.exceptionDetails) {
      const d = r.exceptionDetails;
      fail(`in the page: ${d.exception?.description || d.text} (evaluating ${expression.slice(0, 80)})`);
    }
    return r.result.value;
  }
  // Waits until expression is truthy; returns its value.
  async waitFor(expression, what, timeoutMs = 10000) {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const v = await this.eval(expression);
      if (v) return v;
      if (Date.now() > until) fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await sleep(25);
    }
  }
  async click(selector) {
    const box = await this.eval(`(() => {
      const e = document.querySelector(${JSON.stringify(selector)});
      if (!e) return null;
      e.scrollIntoView({ block: "center" });
      const r = e.getBoundingClientRect();
      return { x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width, h: r.height };
    })()`);
    if (!box) fail(`no element ${selector} on the page`);
    if (!(box.w > 0 && box.h > 0)) fail(`${selector} is not visible (box ${box.w}x${box.h})`);
    const at = { x: box.x, y: box.y };
    await this.send("Input.dispatchMouseEvent", { type: "mouseMoved", ...at });
    await this.send("Input.dispatchMouseEvent", { type: "mousePressed", button: "left", clickCount: 1, ...at });
    await this.send("Input.dispatchMouseEvent", { type: "mouseReleased", button: "left", clickCount: 1, ...at });
  }
  // A key press with modifiers (CDP: 1 Alt, 2 Ctrl, 4 Meta, 8 Shift) on the focused element.
  async press(key, code, keyCode, modifiers = 0) {
    const common = { key, code, windowsVirtualKeyCode: keyCode, modifiers };
    await this.send("Input.dispatchKeyEvent", { type: "rawKeyDown", ...common });
    await this.send("Input.dispatchKeyEvent", { type: "keyUp", ...common });
  }
  // Focuses the field, clears it, and types text into it (as an input method commits text).
  async type(selector, text) {
    const ok = await this.eval(`(() => {
      const e = document.querySelector(${JSON.stringify(selector)});
      if (!e) return false;
      e.focus(); e.value = "";
      e.dispatchEvent(new Event("input", { bubbles: true }));
      return document.activeElement === e;
    })()`);
    if (!ok) fail(`cannot focus ${selector}`);
    if (text !== "") await this.send("Input.insertText", { text });
    const got = await this.eval(`document.querySelector(${JSON.stringify(selector)}).value`);
    if (got !== text) fail(`typed ${JSON.stringify(text)} into ${selector} but it holds ${JSON.stringify(got)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Processes and clean-up.
const cleanups = [];
let step = "starting";
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tinylm-browser-"));
cleanups.push(async () => fs.rmSync(tmp, { recursive: true, force: true }));

function tail(lines, n = 15) { return lines.join("").split("\n").slice(-n).join("\n"); }

function waitExit(child, ms) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve({ code: child.exitCode, signal: child.signalCode });
    const t = setTimeout(() => resolve(null), ms);
    child.once("exit", (code, signal) => { clearTimeout(t); resolve({ code, signal }); });
  });
}

function run(cmd, args, ms) {
  return new Promise((resolve) => {
    const c = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    c.stdout.on("data", (d) => { out += d; });
    c.stderr.on("data", (d) => { out += d; });
    const t = setTimeout(() => c.kill("SIGKILL"), ms);
    c.on("error", (e) => { clearTimeout(t); resolve({ code: -1, out: String(e) }); });
    c.on("exit", (code) => { clearTimeout(t); resolve({ code, out }); });
  });
}

async function startServer() {
  let model = opts.model;
  if (!model) {
    step = "writing a small GPT-2 with tinylm init";
    model = path.join(tmp, "model");
    const r = await run(opts.tinylm, ["init", "--arch", "gpt2", "--preset", "mini", "--seed", "3",
                                      "--out", model, "--threads", "1"], 30000);
    if (r.code !== 0) fail(`${opts.tinylm} init failed (exit ${r.code}): ${r.out.trim()}`);
  }
  step = "starting tinylm serve";
  const args = ["serve", "--model", model, "--port", "0"];
  if (opts.threads && opts.threads !== "0") args.push("--threads", opts.threads);
  if (opts.apiKey) args.push("--api-key", opts.apiKey);
  log("starting", opts.tinylm, args.join(" "));
  const server = spawn(opts.tinylm, args, { stdio: ["ignore", "pipe", "pipe"] });
  const output = [];
  server.stdout.on("data", (d) => output.push(String(d)));
  let exited = null;
  const state = { server, output, stopped: false };
  cleanups.push(async () => {
    if (state.stopped || exited) return;
    server.kill("SIGKILL");
    await waitExit(server, 2000);
  });
  const url = await new Promise((resolve, reject) => {
    let err = "";
    const t = setTimeout(() => reject(new Failure(`tinylm serve printed no "listening on" line in 20 s:\n${tail(output)}`)), 20000);
    server.stderr.on("data", (d) => {
      output.push(String(d));
      err += d;
      const m = err.match(/listening on (https?:\/\/[^\s]+)/);
      if (m) { clearTimeout(t); resolve(m[1].replace(/\/+$/, "")); }
    });
    server.on("error", (e) => { clearTimeout(t); reject(new Failure(`cannot start ${opts.tinylm}: ${e.message}`)); });
    server.on("exit", (code, signal) => {
      exited = { code, signal };
      clearTimeout(t);
      reject(new Failure(`tinylm serve exited (code ${code}, signal ${signal}) before listening:\n${tail(output)}`));
    });
  });
  log("server at", url);
  state.url = url;
  state.exitedEarly = () => exited;
  return state;
}

async function stopServer(state) {
  step = "stopping tinylm serve with SIGTERM";
  if (state.exitedEarly()) fail(`tinylm serve exited early: ${JSON.stringify(state.exitedEarly())}\n${tail(state.output)}`);
  state.server.kill("SIGTERM");
  const r = await waitExit(state.server, 10000);
  state.stopped = true;
  if (!r) {
    state.server.kill("SIGKILL");
    fail(`tinylm serve did not exit within 10 s of SIGTERM:\n${tail(state.output)}`);
  }
  if (r.code !== 0) fail(`tinylm serve exited with code ${r.code} (signal ${r.signal}) after SIGTERM, expected 0:\n${tail(state.output)}`);
}

async function startChromium(exe) {
  step = "starting Chromium";
  const profile = path.join(tmp, "profile");
  fs.mkdirSync(profile);
  const args = [
    "--headless", "--no-sandbox", "--remote-debugging-pipe", `--user-data-dir=${profile}`,
    "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
    "--disable-extensions", "--disable-background-networking", "--disable-sync",
    "--disable-component-update", "--disable-features=Translate,MediaRouter,OptimizationHints",
    "--mute-audio", "--window-size=1024,900", "--lang=en-US", "about:blank",
  ];
  log("starting", exe);
  const child = spawn(exe, args, { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"], detached: true });
  const errLines = [];
  child.stderr.on("data", (d) => { errLines.push(String(d)); if (errLines.length > 200) errLines.shift(); });
  const spawnError = new Promise((_, reject) => child.on("error", (e) =>
    reject(new Failure(`cannot start ${exe}: ${e.message}`))));
  spawnError.catch(() => {});
  cleanups.push(async () => {
    try { await Promise.race([cdp.send("Browser.close"), sleep(1500)]); } catch { /* already gone */ }
    // Chromium's helpers (zygote, renderer, GPU) share its process group.
    try { process.kill(-child.pid, "SIGKILL"); } catch { /* gone */ }
    await waitExit(child, 2000);
  });
  const cdp = new Cdp(child.stdio[3], child.stdio[4]);
  const version = await Promise.race([
    cdp.send("Browser.getVersion"), spawnError,
    sleep(20000).then(() => fail(`Chromium did not answer on the DevTools pipe in 20 s:\n${tail(errLines)}`)),
  ]).catch((e) => { throw new Failure(`${e.message}\n${tail(errLines)}`); });
  log("browser", version.product);
  return { cdp, errLines, version };
}

async function openPage(cdp, url) {
  step = `opening ${url}/`;
  const { targetId } = await cdp.send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await cdp.send("Target.attachToTarget", { targetId, flatten: true });
  const page = new Page(cdp, sessionId);
  page.problems = [];
  cdp.on((msg) => {
    if (msg.sessionId !== sessionId) return;
    if (msg.method === "Runtime.exceptionThrown") {
      const d = msg.params.exceptionDetails;
      page.problems.push(`uncaught exception: ${d.exception?.description || d.text}`);
    } else if (msg.method === "Runtime.consoleAPICalled" && msg.params.type === "error") {
      page.problems.push(`console.error: ${msg.params.args.map((a) => a.value ?? a.description).join(" ")}`);
    } else if (msg.method === "Log.entryAdded" && msg.params.entry.level === "error" &&
               msg.params.entry.source !== "network") {
      // Network errors (the 400 of check 4) are expected; others are the page's fault.
      page.problems.push(`log: ${msg.params.entry.text}`);
    }
  });
  await page.send("Runtime.enable");
  await page.send("Log.enable");
  await page.send("Page.enable");
  const nav = await page.send("Page.navigate", { url: url + "/" });
  if (nav.errorText) fail(`cannot load ${url}/: ${nav.errorText}`);
  await page.waitFor(`document.readyState === "complete" && !!document.getElementById("generate")`,
                     "the page to load (with a #generate button)");
  return page;
}

// ---------------------------------------------------------------------------------------------
// HTTP to the server, from the test itself.
// timeoutMs covers the whole answer, its body included.
async function http(url, { method = "GET", body, key, timeoutMs = 15000 } = {}) {
  const headers = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (key) headers.Authorization = `Bearer ${key}`;
  let r, text;
  try {
    r = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body),
                           signal: AbortSignal.timeout(timeoutMs) });
    text = await r.text();
  } catch (e) {
    fail(`${method} ${url}: ${e.cause?.message || e.message}`);
  }
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, type: r.headers.get("content-type") || "", text, json };
}

function firstDifference(a, b) {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

// ---------------------------------------------------------------------------------------------
// The test.
async function main() {
  let base = opts.url, serverState = null, mock = null, key = opts.apiKey;
  if (opts.mock) {
    step = "starting the mock server";
    const { startMock } = await import(path.join(here, "mock_server.mjs"));
    key ||= "mock-key-123";
    mock = await startMock({ apiKey: key, delayMs: 6 });
    cleanups.push(() => new Promise((r) => { mock.server.closeAllConnections(); mock.server.close(r); }));
    base = `http://127.0.0.1:${mock.port}`;
  }

  // Chromium first: where it is missing, the test skips before starting anything else.
  const exe = findChromium();
  if (!exe) {
    process.stdout.write("SKIP: chromium not found (apt-get install chromium)\n");
    return 77;
  }
  if (opts.tinylm) {
    serverState = await startServer();
    base = serverState.url;
  }

  step = "asking the server directly";
  const page0 = await http(base + "/");
  if (page0.status !== 200 || !/text\/html/.test(page0.type)) {
    fail(`GET / answered ${page0.status} (${page0.type}), expected 200 text/html`);
  }
  const health = await http(base + "/health");
  if (health.status !== 200 || health.json?.status !== "ok") {
    fail(`GET /health answered ${health.status} ${health.text.slice(0, 200)}, expected 200 {"status":"ok"}`);
  }
  const models = await http(base + "/v1/models", { key });
  const modelId = models.json?.data?.[0]?.id;
  if (models.status !== 200 || typeof modelId !== "string") {
    fail(`GET /v1/models answered ${models.status} ${models.text.slice(0, 200)}, expected a list with a model id`);
  }
  const params = { model: modelId, prompt: opts.prompt, max_tokens: opts.maxTokens, temperature: 0,
                   top_p: 1, top_k: 40, seed: 7 };
  const whole = await http(base + "/v1/completions", { method: "POST", body: params, key, timeoutMs: generationMs });
  const expected = whole.json?.choices?.[0]?.text;
  if (whole.status !== 200 || typeof expected !== "string") {
    fail(`POST /v1/completions (not streamed) answered ${whole.status} ${whole.text.slice(0, 300)}`);
  }
  if (expected.length === 0) fail("the non-streamed completion is empty: nothing to compare");
  if (opts.expect !== null && expected !== opts.expect) {
    fail(`the non-streamed completion ${JSON.stringify(expected)} is not --expect ${JSON.stringify(opts.expect)}`);
  }
  const expectedTokens = whole.json?.usage?.completion_tokens;
  log("expected", JSON.stringify(expected), "tokens", expectedTokens);

  const browser = await startChromium(exe);
  const page = await openPage(browser.cdp, base);

  // 1. The model name (after the API key, where the server wants one).
  if (key) {
    step = "entering the API key";
    await page.waitFor(`/API key/i.test(document.getElementById("model").textContent)`,
                       "#model to ask for the API key (GET /v1/models answers 401 without it)");
    await page.click("#form details > summary");
    await page.type("#api_key", key);
  }
  step = "waiting for the model name";
  await page.waitFor(`document.getElementById("model").textContent === ${JSON.stringify(modelId)}`,
                     `#model to show ${JSON.stringify(modelId)} (from GET /v1/models)`);

  // 2 and 3. Type, click, read.
  step = "typing the prompt and the sampling controls";
  await page.type("#prompt", opts.prompt);
  await page.type("#max_tokens", String(opts.maxTokens));
  await page.type("#temperature", "0");
  await page.type("#top_p", "1");
  await page.type("#top_k", "40");
  await page.type("#seed", "7");
  await page.eval(`(() => {
    const o = document.getElementById("output");
    window.__states = [];
    window.__observer = new MutationObserver(() => {
      window.__states.push({ t: performance.now(), len: o.textContent.length,
                             state: document.body.dataset.state });
    });
    window.__observer.observe(o, { childList: true, subtree: true, characterData: true });
    return true;
  })()`);
  step = "generating (clicked #generate)";
  const t0 = Date.now();
  await page.click("#generate");
  const state = await page.waitFor(
    `["done", "error", "stopped"].includes(document.body.dataset.state) && document.body.dataset.state`,
    "the generation to end (body[data-state] done, error or stopped)", generationMs);
  const elapsed = Date.now() - t0;
  const result = await page.eval(`(() => {
    window.__observer.disconnect();
    const s = document.getElementById("stats");
    const stat = (k) => s.querySelector('[data-stat="' + k + '"]')?.textContent ?? "";
    return { output: document.getElementById("output").textContent,
             error: document.getElementById("error").hidden ? "" : document.getElementById("error").textContent,
             stats: s.textContent, tokens: s.dataset.tokens, tps: stat("tps"), ttft: stat("ttft"),
             states: window.__states };
  })()`);
  log(`ended "${state}" in ${elapsed} ms; stats: ${result.stats}`);
  if (state !== "done") fail(`the page ended in state "${state}", not "done"; #error: ${result.error || "(none)"}`);
  if (result.output !== expected) {
    const i = firstDifference(result.output, expected);
    fail(`the page's streamed text differs from the non-streamed completion at character ${i}:\n` +
         `  page:     ${JSON.stringify(result.output.slice(Math.max(0, i - 20), i + 40))} (${result.output.length} chars)\n` +
         `  expected: ${JSON.stringify(expected.slice(Math.max(0, i - 20), i + 40))} (${expected.length} chars)`);
  }
  const lengths = [...new Set(result.states.filter((s) => s.len > 0).map((s) => s.len))];
  const partial = lengths.filter((n) => n < expected.length);
  log(`output states (lengths) seen: ${lengths.join(" ")}`);
  const gaps = result.states.slice(1).map((s, i) => Math.round(s.t - result.states[i].t)).sort((x, y) => x - y);
  if (gaps.length) {
    log(`ms between updates of #output: median ${gaps[gaps.length >> 1]}, ` +
        `p90 ${gaps[Math.floor(gaps.length * 0.9)]}, max ${gaps.at(-1)}`);
  }
  // A short generation on a loaded machine can reach the page in one read, so only one that
  // took a second or more must have shown partial text (the C++ tests check the events).
  if ((lengths.length < 2 || partial.length < 1) && elapsed < 1000) {
    log(`progress: inconclusive, the whole text arrived at once after ${elapsed} ms`);
  } else if (lengths.length < 2 || partial.length < 1) {
    fail(`the text did not appear progressively: #output went through ${lengths.length} non-empty ` +
         `state(s) (lengths ${lengths.join(", ") || "none"}), expected at least 2 before the final ` +
         `${expected.length} chars (is the response streamed and flushed per token?)`);
  }
  if (!/\d tokens\/s/.test(result.tps)) fail(`#stats shows no tokens/s: ${JSON.stringify(result.stats)}`);
  if (!/first token \d+ ms/.test(result.ttft)) fail(`#stats shows no time to first token: ${JSON.stringify(result.stats)}`);
  if (Number.isInteger(expectedTokens) && Number(result.tokens) !== expectedTokens) {
    fail(`#stats counts ${result.tokens} tokens, the non-streamed usage.completion_tokens is ${expectedTokens}`);
  }
  if (mock) {
    const sent = JSON.stringify(mock.stats.lastBody);
    const want = JSON.stringify({ ...params, stream: true });
    const sorted = (j) => JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(j)).sort()));
    if (sorted(sent) !== sorted(want)) fail(`the page sent ${sent}, expected ${want}`);
  }

  // 3b. The Chat tab, on a real server: two turns typed and sent; each streamed reply equals the
  // non-streamed chat completion of the conversation so far (the same sampling controls).
  if (!mock) {
    step = "chatting in the Chat tab";
    const sampling = { ...params };
    delete sampling.prompt;
    const messages = [];
    await page.click("#tab_chat");
    await page.waitFor(`document.body.dataset.tab === "chat" && !document.getElementById("panel_chat").hidden &&
                        document.getElementById("panel_complete").hidden`, "the Chat tab to show");
    for (const said of ["Hello there", "And then?"]) {
      messages.push({ role: "user", content: said });
      const whole = await http(base + "/v1/chat/completions",
                               { method: "POST", body: { ...sampling, messages }, key, timeoutMs: generationMs });
      const reply = whole.json?.choices?.[0]?.message?.content;
      if (whole.status !== 200 || typeof reply !== "string") {
        fail(`POST /v1/chat/completions (not streamed) answered ${whole.status} ${whole.text.slice(0, 300)}`);
      }
      messages.push({ role: "assistant", content: reply });
      await page.type("#chat_input", said);
      await page.click("#generate");
      const chatState = await page.waitFor(
        `["done", "error", "stopped"].includes(document.body.dataset.state) && document.body.dataset.state`,
        "the chat reply to end", generationMs);
      const shownLog = await page.eval(`[...document.querySelectorAll("#chat_log .msg")]
        .map((d) => ({ role: d.dataset.role, content: d.lastChild.textContent }))`);
      if (chatState !== "done" || JSON.stringify(shownLog) !== JSON.stringify(messages)) {
        fail(`after sending ${JSON.stringify(said)} the page is "${chatState}" and shows the conversation\n` +
             `  ${JSON.stringify(shownLog)}\nexpected (non-streamed replies)\n  ${JSON.stringify(messages)}`);
      }
      log(`chat: ${JSON.stringify(said)} -> ${JSON.stringify(messages.at(-1).content)}`);
    }
    await page.click("#chat_clear");
    const left = await page.eval(`document.querySelectorAll("#chat_log .msg").length`);
    if (left !== 0) fail(`after New chat the page still shows ${left} messages`);
    await page.click("#tab_complete");
    await page.waitFor(`document.body.dataset.tab === "complete" && !document.getElementById("output").hidden`,
                       "the Complete tab to show again");
  }

  // 4. An error from the server is shown.
  step = "checking the display of a server error (temperature -1)";
  const bad = await http(base + "/v1/completions",
                         { method: "POST", body: { ...params, temperature: -1, stream: true }, key });
  const badMessage = bad.json?.error?.message;
  if (!(bad.status >= 400 && bad.status < 500) || typeof badMessage !== "string") {
    fail(`POST /v1/completions with temperature -1 answered ${bad.status} ${bad.text.slice(0, 200)}, ` +
         `expected a 4xx OpenAI error object`);
  }
  await page.type("#temperature", "-1");
  await page.click("#generate");
  const badState = await page.waitFor(
    `["done", "error", "stopped"].includes(document.body.dataset.state) && document.body.dataset.state`,
    "the rejected request to end", 10000);
  const shown = await page.eval(`document.getElementById("error").hidden ? "" : document.getElementById("error").textContent`);
  if (badState !== "error" || !shown.includes(badMessage) || !shown.includes(String(bad.status))) {
    fail(`after a ${bad.status} ("${badMessage}") the page is "${badState}" and #error shows ${JSON.stringify(shown)}`);
  }
  log("error shown:", shown);

  // 5. Stop, on a real server: the generation ends early and the server counts it cancelled
  // (tinylm_cancelled_total in GET /metrics). Inconclusive, not failed, where the whole
  // completion arrives before the click lands (a fast machine).
  if (!mock) {
    step = "checking the Stop button";
    const metric = async (name) => {
      const m = await http(base + "/metrics", { key });
      const v = m.status === 200 && m.text.match(new RegExp(`^${name}\\s+(\\d+)`, "m"));
      return v ? Number(v[1]) : null;
    };
    const cancelled = () => metric("tinylm_cancelled_total");
    const before = await cancelled();
    const generatedBefore = await metric("tinylm_generated_tokens_total");
    const context = Number(models.json?.data?.[0]?.context_length) || 128;
    const long = Math.max(16, context - 16);
    await page.type("#temperature", "0.8");
    await page.type("#max_tokens", String(long));
    await page.click("#generate");
    await page.waitFor(`document.getElementById("output").textContent.length > 0 ||
                        document.body.dataset.state !== "running"`, "text to stream", 10000);
    await page.click("#stop");
    const st = await page.waitFor(`document.body.dataset.state !== "running" && document.body.dataset.state`,
                                  "Stop to end the generation", 5000);
    const tokens = Number(await page.eval(`document.getElementById("stats").dataset.tokens`));
    if (st === "done") {
      log(`Stop: inconclusive, all ${tokens} tokens arrived before the click`);
    } else if (st !== "stopped") {
      fail(`after Stop the page is "${st}", expected "stopped"`);
    } else if (before === null) {
      log("Stop: the page stopped; GET /metrics has no tinylm_cancelled_total, so the server side is not checked");
    } else {
      // Either the server counts the generation cancelled, or it had generated (and sent) every
      // token before the closed connection reached it (Chromium may drain part of an aborted
      // response first): then nothing was left to cancel, whatever the page showed.
      const until = Date.now() + 15000;
      let now, finished = false;
      while ((now = await cancelled()) <= before) {
        if ((await metric("tinylm_generated_tokens_total")) - generatedBefore >= long) {
          finished = true;
          break;
        }
        if (Date.now() > until) {
          fail(`after Stop (${tokens} of ${long} tokens) tinylm_cancelled_total stayed ${now} in 15 s`);
        }
        await sleep(50);
      }
      if (finished) {
        log(`Stop: inconclusive, the server finished all ${long} tokens before the Stop reached it`);
      } else {
        log(`Stop: stopped after ${tokens} of ${long} tokens; tinylm_cancelled_total ${before} -> ${now}`);
      }
    }
  }

  // 5. Stop (the mock streams slowly enough to stop it, and reports the closed connection).
  if (mock) {
    step = "checking the Stop button";
    await page.type("#temperature", "0.5");
    await page.type("#max_tokens", "5000");
    await page.click("#generate");
    await page.waitFor(`document.getElementById("output").textContent.length > 0`, "text to stream", 5000);
    await page.click("#stop");
    const afterStop = await page.waitFor(`document.body.dataset.state !== "running" && document.body.dataset.state`,
                                         "Stop to end the generation", 5000);
    if (afterStop !== "stopped") fail(`after Stop the page is "${afterStop}", expected "stopped"`);
    // Esc stops too.
    await page.click("#generate");
    await page.waitFor(`document.body.dataset.state === "running" &&
                        document.getElementById("output").textContent.length > 0`, "text to stream", 5000);
    await page.press("Escape", "Escape", 27);
    const st = await page.waitFor(
      `["done", "error", "stopped"].includes(document.body.dataset.state) && document.body.dataset.state`,
      "the stopped request to end", 5000);
    if (st !== "stopped") fail(`after Esc the page is "${st}", expected "stopped"`);
    const until = Date.now() + 3000;
    while (mock.stats.cancelled < 2) {
      if (Date.now() > until) {
        fail(`after Stop and Esc the server saw ${mock.stats.cancelled} of 2 streams' connections close`);
      }
      await sleep(20);
    }
    const buttons = await page.eval(`document.getElementById("generate").disabled === false &&
                                     document.getElementById("stop").disabled === true`);
    if (!buttons) fail("after Stop, Generate is not enabled again or Stop is still enabled");

    // A stream that ends in an error event, and one that just stops.
    for (const [prompt, want] of [["!error-midstream", "The request ran past its time limit"],
                                  ["!truncated", "stream ended before the completion did"]]) {
      step = `checking a stream that ends badly (${prompt})`;
      await page.type("#max_tokens", "10");
      await page.type("#prompt", prompt);
      await page.press("Enter", "Enter", 13, 2);  // Ctrl+Enter in the prompt generates
      const end = await page.waitFor(
        `["done", "error", "stopped"].includes(document.body.dataset.state) && document.body.dataset.state`,
        "the request to end", 5000);
      const shownErr = await page.eval(`document.getElementById("error").textContent`);
      const text = await page.eval(`document.getElementById("output").textContent`);
      if (end !== "error" || !shownErr.includes(want) || text.length === 0) {
        fail(`for ${prompt} the page is "${end}" with #error ${JSON.stringify(shownErr)} and ` +
             `${text.length} chars of text; expected "error", ${JSON.stringify(want)} and the text so far`);
      }
    }
  }

  if (mock) {
    step = "reloading the page (the prompt and the controls are kept)";
    await page.eval(`window.__beforeReload = true`);
    await page.send("Page.reload", {});
    await page.waitFor(`!window.__beforeReload && document.readyState === "complete" &&
                        document.getElementById("model").textContent !== "connecting…"`,
                       "the page to load again");
    const kept = await page.eval(`[document.getElementById("prompt").value, document.getElementById("max_tokens").value,
                                   document.getElementById("api_key").value]`);
    if (kept[0] !== "!truncated" || kept[1] !== "10" || kept[2] !== "") {
      fail(`after a reload the page holds prompt ${JSON.stringify(kept[0])}, max tokens ${JSON.stringify(kept[1])} ` +
           `and key ${JSON.stringify(kept[2])}; expected the last prompt, 10 and no key`);
    }
  }

  if (opts.screenshot) {
    step = "taking screenshots";
    for (const scheme of ["light", "dark"]) {
      await page.send("Emulation.setEmulatedMedia", { features: [{ name: "prefers-color-scheme", value: scheme }] });
      const shot = await page.send("Page.captureScreenshot", { format: "png" });
      fs.writeFileSync(`${opts.screenshot}-${scheme}.png`, Buffer.from(shot.data, "base64"));
    }
  }

  if (page.problems.length) fail(`the page reported errors:\n  ${page.problems.join("\n  ")}`);
  if (serverState) await stopServer(serverState);
  process.stdout.write(`PASS: ${browser.version.product}, ${base}/ (model ${modelId}): ` +
    `${JSON.stringify(expected).slice(0, 60)}… streamed in ${lengths.length} steps, ${result.stats}\n`);
  return 0;
}

// Runs each clean-up once, the last registered first.
async function cleanup() {
  for (const fn of cleanups.splice(0).reverse()) {
    try { await fn(); } catch { /* best effort */ }
  }
}

let timedOut = false;
const timer = setTimeout(async () => {
  timedOut = true;
  process.stdout.write(`FAIL (${step}): timed out after ${opts.timeout} s\n`);
  await Promise.race([cleanup(), sleep(5000)]);
  process.exit(1);
}, opts.timeout * 1000);

let code;
try {
  code = await main();
} catch (e) {
  if (timedOut) await new Promise(() => {});  // the timer reports and exits
  process.stdout.write(`FAIL (${step}): ${e instanceof Failure ? e.message : e.stack}\n`);
  code = 1;
}
if (timedOut) await new Promise(() => {});
clearTimeout(timer);
await Promise.race([cleanup(), sleep(8000)]);
process.exit(code);
