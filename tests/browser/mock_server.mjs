// A stand-in for `tinylm serve` that speaks the same OpenAI-style API (GET /, GET /health,
// GET /v1/models, POST /v1/completions with and without "stream"), for page_test.mjs --mock:
// it checks the page itself, with no model and no tinylm binary.
//
// The streamed text is a fixed list of pieces (multi-byte UTF-8, an emoji, a CR LF, a line
// made of spaces) and the response bytes are written in uneven slices, some cutting a UTF-8
// sequence or an SSE line in two, some carrying several events at once, so the page's SSE
// reader is exercised where real servers split. The prompt "!error-midstream" ends the stream
// with an error event after a few pieces, "!truncated" ends it with neither a finish_reason
// nor [DONE]. Node standard library only.
//
//   node tests/browser/mock_server.mjs [--port N] [--api-key KEY] [--delay-ms MS]
// prints "tinylm serve: listening on http://127.0.0.1:PORT" to stderr, like tinylm serve.
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
// TINYLM_WEB_PAGE=FILE serves another page (to try a change, or to see the test fail).
export const PAGE_PATH = process.env.TINYLM_WEB_PAGE ||
                         path.resolve(here, "../../src/tinylm/serve/web/index.html");
export const MODEL_ID = "mock-gpt2";
const PIECES = ["Once", " upon", " a", " time", ",", " naïve", " café", " ✓", " 😀", "\r\n",
                "  ", "\n", "data:", " [DONE]", " end", "."];

// The completion of `maxTokens` pieces (the prompt only picks where the list starts).
export function mockPieces(prompt, maxTokens) {
  let start = 0;
  for (const ch of prompt) start = (start + ch.codePointAt(0)) % PIECES.length;
  const out = [];
  for (let i = 0; i < maxTokens; i++) out.push(PIECES[(start + i) % PIECES.length]);
  return out;
}

function sendJson(res, status, obj) {
  const body = JSON.stringify(obj);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}

function sendError(res, status, message, type, code) {
  sendJson(res, status, { error: { message, type, code } });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Starts the mock; resolves to { server, port, stats } (stats.cancelled counts streams whose
// client went away before the end, stats.lastBody is the last completion request).
export function startMock({ port = 0, apiKey = "", delayMs = 8, log = false } = {}) {
  const stats = { completions: 0, streams: 0, cancelled: 0, lastBody: null };
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, "http://x");
    if (log) process.stderr.write(`mock: ${req.method} ${url.pathname}\n`);
    if (req.method === "GET" && (url.pathname === "/" || url.pathname === "/index.html")) {
      const page = fs.readFileSync(PAGE_PATH);
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Content-Length": page.length });
      return res.end(page);
    }
    if (req.method === "GET" && url.pathname === "/health") return sendJson(res, 200, { status: "ok" });
    if (req.method === "GET" && url.pathname === "/mock/stats") return sendJson(res, 200, stats);
    const needsKey = url.pathname.startsWith("/v1/");
    if (needsKey && apiKey && req.headers.authorization !== `Bearer ${apiKey}`) {
      return sendError(res, 401, "Invalid or missing API key", "invalid_request_error", "invalid_api_key");
    }
    if (req.method === "GET" && url.pathname === "/v1/models") {
      return sendJson(res, 200, { object: "list",
        data: [{ id: MODEL_ID, object: "model", created: 1700000000, owned_by: "tinylm" }] });
    }
    if (url.pathname !== "/v1/completions") {
      return sendError(res, 404, `No route for ${req.method} ${url.pathname}`, "invalid_request_error", "not_found");
    }
    if (req.method !== "POST") return sendError(res, 405, "Use POST", "invalid_request_error", null);
    let raw = "";
    for await (const chunk of req) raw += chunk;
    let body;
    try { body = JSON.parse(raw); } catch {
      return sendError(res, 400, "The body is not JSON", "invalid_request_error", null);
    }
    const t = body.temperature ?? 1;
    if (typeof t !== "number" || !(t >= 0 && t <= 2)) {
      return sendError(res, 400, `temperature must be in [0, 2], got ${JSON.stringify(t)}`,
                       "invalid_request_error", "invalid_value");
    }
    const maxTokens = body.max_tokens ?? 16;
    if (!Number.isInteger(maxTokens) || maxTokens < 1) {
      return sendError(res, 400, "max_tokens must be a positive integer", "invalid_request_error", "invalid_value");
    }
    if (typeof body.prompt !== "string") {
      return sendError(res, 400, "prompt must be a string", "invalid_request_error", "invalid_value");
    }
    stats.completions++;
    stats.lastBody = body;
    const pieces = mockPieces(body.prompt, maxTokens);
    const usage = { prompt_tokens: [...body.prompt].length, completion_tokens: pieces.length,
                    total_tokens: [...body.prompt].length + pieces.length };
    const base = { id: "cmpl-mock" + stats.completions, object: "text_completion",
                   created: Math.floor(Date.now() / 1000), model: MODEL_ID };
    if (!body.stream) {
      return sendJson(res, 200, { ...base, choices: [{ text: pieces.join(""), index: 0,
        logprobs: null, finish_reason: "length" }], usage });
    }
    stats.streams++;
    let gone = false;
    res.on("close", () => { if (!res.writableFinished) gone = true; });
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
    const event = (obj) => `data: ${JSON.stringify(obj)}\n\n`;
    const events = pieces.map((text) => event({ ...base,
      choices: [{ text, index: 0, logprobs: null, finish_reason: null }] }));
    events.splice(1, 0, ": keep-alive\n\n");
    if (body.prompt === "!error-midstream") {
      // An error after some text, as a server's per-request time limit would end a stream.
      events.splice(4);
      events.push(event({ error: { message: "The request ran past its time limit",
                                   type: "server_error", code: "timeout" } }));
    } else if (body.prompt !== "!truncated") {  // "!truncated": the connection just ends
      events.push(event({ ...base, choices: [{ text: "", index: 0, logprobs: null, finish_reason: "length" }],
                          usage }));
      events.push("data: [DONE]\n\n");
    } else {
      events.splice(4);
    }
    // Uneven slices: every third write is two events at once, and every write boundary is
    // moved by a few bytes, so slices end inside lines and inside UTF-8 sequences.
    const bytes = [];
    for (let i = 0; i < events.length; i += (i % 3 === 2 ? 2 : 1)) {
      bytes.push(Buffer.from(events.slice(i, i + (i % 3 === 2 ? 2 : 1)).join("")));
    }
    const all = Buffer.concat(bytes);
    let at = 0, k = 0;
    const cuts = [];
    for (const b of bytes) { at += b.length; cuts.push(Math.min(all.length, at + [0, 3, 7, 1, 5][k++ % 5])); }
    let from = 0;
    for (const to of cuts) {
      if (gone) { stats.cancelled++; return; }
      if (to > from) res.write(all.subarray(from, to));
      from = to;
      await sleep(delayMs);
    }
    if (from < all.length) res.write(all.subarray(from));
    res.end();
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve({ server, port: server.address().port, stats }));
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : dflt; };
  const { server, port } = await startMock({ port: Number(opt("--port", "0")), apiKey: opt("--api-key", ""),
                                             delayMs: Number(opt("--delay-ms", "8")), log: true });
  process.stderr.write(`tinylm serve: listening on http://127.0.0.1:${port}\n`);
  // Like tinylm serve: stop accepting, end what is open (a browser keeps idle and preconnected
  // sockets), exit 0.
  const stop = () => { server.close(() => process.exit(0)); server.closeAllConnections(); };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
