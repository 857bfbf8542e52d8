// A client built with the official TypeScript SDK that sends one request larger than the
// server's message limit, then a small one, over stdio, and reports what came back.
//
//   node ts_big_request.mjs <bytes> <command> [args...]
//
// The SDK writes a request as {method, params, jsonrpc, id}: the id comes after the
// params, so a server that reads only the first bytes of an oversized line cannot name
// the request in its error, and the SDK's call then waits for its timeout (30 s here).
// Prints one JSON line: {"big": {"code", "message", "ms"}, "small": {"text"}}.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [size, command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, stderr: 'inherit' });
const client = new Client({ name: 'ts-big-request', version: '0' });
await client.connect(transport);

const report = {};
const started = Date.now();
try {
    await client.callTool({ name: 'echo', arguments: { message: 'x'.repeat(Number(size)) } }, undefined, {
        timeout: 30_000
    });
    report.big = { code: null, message: 'answered', ms: Date.now() - started };
} catch (error) {
    report.big = { code: error.code ?? null, message: String(error.message), ms: Date.now() - started };
}
const small = await client.callTool({ name: 'echo', arguments: { message: 'small' } });
report.small = { text: small.content[0].text };
process.stdout.write(JSON.stringify(report) + '\n');
await client.close();
