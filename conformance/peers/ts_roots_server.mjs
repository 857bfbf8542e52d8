// A server built with the official TypeScript SDK that uses its client's roots the way a
// filesystem server does: it asks for them (roots/list) once initialized, when the client
// declared roots, and again on each notifications/roots/list_changed, outside any call; and
// its tool `roots` asks for them during a call.
//
//   node ts_roots_server.mjs <file>
//
// Each answer an ask outside a call got is appended to <file> as one line: the roots' URIs
// joined by commas, "(none)" for an empty list, or "error:<code>" when the ask failed.
// The tool answers with the same text.

import { appendFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { RootsListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const [seen] = process.argv.slice(2);
const mcp = new McpServer({ name: 'ts-roots', version: '0' });

const uris = (roots) => roots.map((root) => root.uri).join(',') || '(none)';

async function asked() {
    try {
        return uris((await mcp.server.listRoots()).roots);
    } catch (error) {
        return `error:${error.code ?? error.message}`;
    }
}

async function record() {
    appendFileSync(seen, (await asked()) + '\n');
}

mcp.server.oninitialized = () => {
    if (mcp.server.getClientCapabilities()?.roots) void record();
};
mcp.server.setNotificationHandler(RootsListChangedNotificationSchema, () => {
    void record();
});
mcp.registerTool('roots', { description: "The client's roots, asked during this call." }, async () => ({
    content: [{ type: 'text', text: await asked() }]
}));

await mcp.connect(new StdioServerTransport());
