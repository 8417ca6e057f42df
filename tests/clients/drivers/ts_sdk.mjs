// The TypeScript SDK client (@modelcontextprotocol/sdk) through finmcp-proxy.
// node ts_sdk.mjs --modules DIR --calls JSON (--url URL | --stdio CMD ARGS...)
// Lists tools, makes each call of --calls, prints one JSON line (the shape of drivers/common.py).
// --modules is the provisioned node_modules folder: an ES module resolves bare imports from its own
// location only (NODE_PATH does not apply), so the SDK is imported by path.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const argv = process.argv.slice(2);
const stdioStart = argv.indexOf("--stdio");
const own = stdioStart === -1 ? argv : argv.slice(0, stdioStart);
const sdk = join(own[own.indexOf("--modules") + 1], "@modelcontextprotocol", "sdk", "dist", "esm", "client");
const load = (file) => import(pathToFileURL(join(sdk, file)).href);
const { Client } = await load("index.js");
const { StreamableHTTPClientTransport } = await load("streamableHttp.js");
const { StdioClientTransport } = await load("stdio.js");
const calls = JSON.parse(own[own.indexOf("--calls") + 1]);
const urlAt = own.indexOf("--url");
const stdioAt = stdioStart;
let transport;
if (urlAt !== -1) {
  transport = new StreamableHTTPClientTransport(new URL(own[urlAt + 1]));
} else if (stdioAt !== -1) {
  const [command, ...args] = argv.slice(stdioAt + 1);
  transport = new StdioClientTransport({ command, args, stderr: "inherit" });
} else {
  throw new Error("ts_sdk.mjs needs --url URL or --stdio CMD ARGS...");
}

const client = new Client({ name: "finmcp-matrix-ts-sdk", version: "1.0.0" });
await client.connect(transport);
const listed = await client.listTools();
const outcomes = [];
for (const [tool, args] of calls) {
  try {
    const result = await client.callTool({ name: tool, arguments: args });
    outcomes.push({ tool, is_error: Boolean(result.isError), error: result.isError ? result.content[0].text : null });
  } catch (error) {
    outcomes.push({ tool, is_error: true, error: String(error.message ?? error), raised: true });
  }
}
await client.close();
console.log(JSON.stringify({ tools: listed.tools.length, protocol: transport.protocolVersion ?? null, calls: outcomes }));
