// An MCP server built with the official TypeScript SDK (McpServer and its experimental
// tasks API), used as a reference peer for the 2025-11-25 tasks feature.
//
//   node ts_tasks_server.mjs               serve on stdio
//   node ts_tasks_server.mjs --http PORT   serve streamable HTTP on http://127.0.0.1:PORT/mcp
//
// The server declares tasks {list, cancel, requests.tools.call} and has six tools:
//   slow_echo {message, delay_ms?}  taskSupport optional  -> text message after delay_ms
//   ask_name  {}                    taskSupport required  -> form elicitation through the task
//   explode   {}                    taskSupport required  -> tool error "boom" (task fails)
//   plain     {message}             no task support       -> text message
//   sleepy    {seconds}             taskSupport optional  -> text "slept" (stops early if cancelled)
//   ask_name_via_task {}            no task support       -> the other direction: the server is
//       the requestor of a task-augmented elicitation/create and the client the task receiver
//       (when the client declared tasks.requests.elicitation.create; else a plain elicitation).
//       Returns "Hello, <name>!" or "No name given", then a JSON account of the exchange
//       (second text block, and structuredContent).
//
// Everything the SDK does on its own (tasks/get, tasks/result, tasks/list, tasks/cancel,
// the task message queue, taskSupport enforcement) is left as the SDK does it: this peer
// shows the SDK's behaviour, it does not correct it. Diagnostics go to stderr.

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import * as z from 'zod/v4';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { InMemoryTaskStore, InMemoryTaskMessageQueue } from '@modelcontextprotocol/sdk/experimental/tasks';

const DEFAULT_TTL_MS = 60_000;
const MAX_TTL_MS = 10 * 60_000;
const POLL_INTERVAL_MS = 200;

const log = (...parts) => process.stderr.write(`[ts_tasks_server] ${parts.join(' ')}\n`);

// One store and one queue for the process; with HTTP every session gets its own McpServer,
// and the store keeps each session's tasks to that session.
const taskStore = new InMemoryTaskStore();
const taskMessageQueue = new InMemoryTaskMessageQueue();

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

function taskOptions(extra) {
    const requested = extra.taskRequestedTtl;
    const ttl = typeof requested === 'number' ? Math.min(Math.max(requested, 0), MAX_TTL_MS) : DEFAULT_TTL_MS;
    return { ttl, pollInterval: POLL_INTERVAL_MS };
}

const text = value => ({ content: [{ type: 'text', text: value }] });

// Runs `work` after the CreateTaskResult has gone out and stores what it returns.
// `work` returns {status: 'completed'|'failed', result}. A task cancelled meanwhile is
// terminal already; the store then refuses the result, which is what we want.
function runTask(store, taskId, work) {
    setImmediate(async () => {
        let outcome;
        try {
            outcome = await work();
        } catch (error) {
            outcome = { status: 'failed', result: { ...text(`Error: ${error?.message ?? error}`), isError: true } };
        }
        if (outcome === undefined) return;
        try {
            await store.storeTaskResult(taskId, outcome.status, outcome.result);
        } catch (error) {
            log(`task ${taskId}: result not stored (${error?.message ?? error})`);
        }
    });
}

async function isCancelled(store, taskId) {
    try {
        const task = await store.getTask(taskId);
        return task.status === 'cancelled';
    } catch {
        return true; // gone: nobody is waiting for it any more
    }
}

// The three task handler methods the SDK's ToolTaskHandler type asks for. createTask (the
// only one McpServer calls in this SDK version) makes the task, answers with it at once and
// runs `work({args, store, taskId})` after it (see runTask); the other two answer from the store.
function taskHandler(work) {
    return {
        createTask: async (...params) => {
            const extra = params[params.length - 1];
            const store = extra.taskStore;
            const task = await store.createTask(taskOptions(extra));
            const args = params.length > 1 ? params[0] : {};
            runTask(store, task.taskId, () => work({ args, store, taskId: task.taskId }));
            return { task };
        },
        getTask: async (...params) => {
            const extra = params[params.length - 1];
            return extra.taskStore.getTask(extra.taskId);
        },
        getTaskResult: async (...params) => {
            const extra = params[params.length - 1];
            return extra.taskStore.getTaskResult(extra.taskId);
        }
    };
}

function buildServer() {
    const mcp = new McpServer(
        { name: 'ts-tasks-peer', version: '1.0.0' },
        {
            capabilities: {
                tools: {},
                tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } }
            },
            taskStore,
            taskMessageQueue
        }
    );

    mcp.experimental.tasks.registerToolTask(
        'slow_echo',
        {
            description: 'Waits delay_ms milliseconds, then returns message as text.',
            inputSchema: { message: z.string(), delay_ms: z.number().min(0).optional() },
            execution: { taskSupport: 'optional' }
        },
        taskHandler(async ({ args: { message, delay_ms } }) => {
            await sleep(delay_ms ?? 0);
            return { status: 'completed', result: text(message) };
        })
    );

    mcp.experimental.tasks.registerToolTask(
        'ask_name',
        {
            description: 'Asks the user for a name with a form elicitation sent through the task.',
            execution: { taskSupport: 'required' }
        },
        taskHandler(async ({ store, taskId }) => {
            await store.updateTaskStatus(taskId, 'input_required', 'Waiting for the user to give a name.');
            // relatedTask puts the request on the task's message queue (delivered on the
            // client's tasks/result stream) and adds the related-task _meta to it.
            const answer = await mcp.server.elicitInput(NAME_REQUEST, {
                relatedTask: { taskId },
                timeout: 120_000
            });
            if (await isCancelled(store, taskId)) return undefined;
            await store.updateTaskStatus(taskId, 'working');
            const name = answer.action === 'accept' ? answer.content?.name : undefined;
            return {
                status: 'completed',
                result: text(typeof name === 'string' && name !== '' ? `Hello, ${name}!` : 'No name given')
            };
        })
    );

    mcp.experimental.tasks.registerToolTask(
        'explode',
        {
            description: 'Always fails: a tool error result with the text "boom".',
            execution: { taskSupport: 'required' }
        },
        taskHandler(async () => ({ status: 'failed', result: { ...text('boom'), isError: true } }))
    );

    mcp.registerTool(
        'plain',
        {
            description: 'Returns message as text. Cannot be called as a task.',
            inputSchema: { message: z.string() }
        },
        async ({ message }) => text(message)
    );

    mcp.experimental.tasks.registerToolTask(
        'sleepy',
        {
            description: 'Sleeps the given number of seconds, then returns "slept". Stops early when its task is cancelled.',
            inputSchema: { seconds: z.number().min(0) },
            execution: { taskSupport: 'optional' }
        },
        taskHandler(async ({ args: { seconds }, store, taskId }) => {
            const until = Date.now() + seconds * 1000;
            while (Date.now() < until) {
                if (await isCancelled(store, taskId)) return undefined;
                await sleep(Math.min(50, until - Date.now()));
            }
            return { status: 'completed', result: text('slept') };
        })
    );

    mcp.registerTool(
        'ask_name_via_task',
        {
            description:
                'Asks the user for a name with elicitation/create sent to the client as a task when the client ' +
                'declared tasks.requests.elicitation.create (else as a plain elicitation). Returns ' +
                '"Hello, <name>!" or "No name given", then a JSON account of what was exchanged.'
        },
        async extra => askNameViaTask(mcp.server, extra)
    );

    return mcp;
}

// ---------------------------------------------------------------- server as task requestor

const CLIENT_TASK_TTL_MS = 60_000;
const NAME_REQUEST = {
    mode: 'form',
    message: 'What is your name?',
    requestedSchema: {
        type: 'object',
        properties: { name: { type: 'string' } },
        required: ['name']
    }
};

// The SDK does the requestor side: elicitInputStream with `task` sends elicitation/create with
// params.task, expects a CreateTaskResult, then polls tasks/get at the task's pollInterval and
// fetches the ElicitResult with tasks/result (on completed, or at once on input_required).
// Every request goes out related to this tools/call (on HTTP: on its POST's SSE stream).
async function askNameViaTask(server, extra) {
    const tasks = server.getClientCapabilities()?.tasks;
    const asTask = Boolean(tasks?.requests?.elicitation?.create);
    const options = { relatedRequestId: extra.requestId, timeout: 60_000 };
    const account = { asTask, taskId: null, statuses: [], action: null, listAsked: false, listed: null };
    let answer;
    try {
        if (asTask) {
            const stream = server.experimental.tasks.elicitInputStream(NAME_REQUEST, {
                ...options,
                task: { ttl: CLIENT_TASK_TTL_MS }
            });
            for await (const message of stream) {
                if (message.type === 'taskCreated') account.taskId = message.task.taskId;
                else if (message.type === 'taskStatus') account.statuses.push(message.task.status);
                else if (message.type === 'result') answer = message.result;
                else if (message.type === 'error') throw message.error;
            }
        } else {
            answer = await server.elicitInput(NAME_REQUEST, options);
        }
    } catch (error) {
        account.error = error?.message ?? String(error);
    }
    account.action = answer?.action ?? null;

    if (asTask && account.taskId && tasks?.list) {
        account.listAsked = true;
        try {
            const seen = [];
            let cursor;
            for (let page = 0; page < 20; page++) {
                const listed = await server.experimental.tasks.listTasks(cursor, options);
                seen.push(...listed.tasks.map(task => task.taskId));
                cursor = listed.nextCursor;
                if (!cursor) break;
            }
            account.listed = seen.includes(account.taskId);
        } catch (error) {
            account.listError = error?.message ?? String(error);
        }
    }

    const name = answer?.action === 'accept' ? answer.content?.name : undefined;
    const greeting = typeof name === 'string' && name !== '' ? `Hello, ${name}!` : 'No name given';
    return {
        content: [
            { type: 'text', text: greeting },
            { type: 'text', text: JSON.stringify(account) }
        ],
        structuredContent: account
    };
}

async function serveStdio() {
    const mcp = buildServer();
    const transport = new StdioServerTransport();
    transport.onclose = () => process.exit(0);
    await mcp.connect(transport);
    process.stdin.on('end', () => process.exit(0));
    log('serving on stdio');
}

function readBody(req) {
    return new Promise((resolve, reject) => {
        const chunks = [];
        req.on('data', chunk => chunks.push(chunk));
        req.on('end', () => {
            const raw = Buffer.concat(chunks).toString('utf8');
            if (raw === '') return resolve(undefined);
            try {
                resolve(JSON.parse(raw));
            } catch (error) {
                reject(error);
            }
        });
        req.on('error', reject);
    });
}

function sendJsonError(res, status, code, message) {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

async function serveHttp(port) {
    const sessions = new Map();
    const http = createServer(async (req, res) => {
        try {
            const url = new URL(req.url ?? '/', 'http://localhost');
            if (url.pathname !== '/mcp') {
                res.writeHead(404).end();
                return;
            }
            const sessionId = req.headers['mcp-session-id'];
            const body = req.method === 'POST' ? await readBody(req) : undefined;
            if (typeof sessionId === 'string') {
                const transport = sessions.get(sessionId);
                if (!transport) return sendJsonError(res, 404, -32001, 'Session not found');
                await transport.handleRequest(req, res, body);
                return;
            }
            const isInitialize = req.method === 'POST' && body && !Array.isArray(body) && body.method === 'initialize';
            if (!isInitialize) return sendJsonError(res, 400, -32000, 'Bad Request: no valid session id');
            const transport = new StreamableHTTPServerTransport({
                sessionIdGenerator: () => randomUUID(),
                onsessioninitialized: sid => sessions.set(sid, transport)
            });
            transport.onclose = () => {
                if (transport.sessionId) sessions.delete(transport.sessionId);
            };
            await buildServer().connect(transport);
            await transport.handleRequest(req, res, body);
        } catch (error) {
            log(`HTTP error: ${error?.stack ?? error}`);
            if (!res.headersSent) sendJsonError(res, 500, -32603, 'Internal server error');
        }
    });
    http.listen(port, '127.0.0.1', () => log(`serving on http://127.0.0.1:${http.address().port}/mcp`));
    const stop = () => {
        for (const transport of sessions.values()) transport.close().catch(() => {});
        http.close();
        process.exit(0);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
}

const argv = process.argv.slice(2);
const httpAt = argv.indexOf('--http');
if (httpAt >= 0) {
    const port = Number(argv[httpAt + 1]);
    if (!Number.isInteger(port) || port < 0) {
        log('usage: ts_tasks_server.mjs [--http PORT]');
        process.exit(2);
    }
    await serveHttp(port);
} else {
    await serveStdio();
}
