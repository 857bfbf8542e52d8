// A client built with the official TypeScript SDK that checks a server's implementation of
// the MCP 2025-11-25 tasks feature (task-augmented tools/call, tasks/get, tasks/result,
// tasks/list, tasks/cancel, input_required with elicitation through the task).
//
//   node ts_tasks_client.mjs [--receiver] --stdio <command> [args...]
//   node ts_tasks_client.mjs [--receiver] --url http://127.0.0.1:PORT/mcp
//
// The server must have the tools of ts_tasks_server.mjs (slow_echo, ask_name, explode,
// plain, sleepy). Prints one JSON line per check, {"check", "ok", "detail"}, then
// {"summary": {"passed", "failed"}}; exits 0 iff every check passed.
//
// --receiver runs the other direction instead (and only its own three checks): the client is
// the task receiver. It declares tasks {list, cancel, requests.elicitation.create}, and the
// server's tool ask_name_via_task sends it a task-augmented elicitation/create. The client
// answers with a CreateTaskResult from the SDK's task store; tasks/get, tasks/result,
// tasks/list and tasks/cancel are answered by the SDK itself (Client options taskStore and
// taskMessageQueue). The checks look at what was on the wire.
//
// Every wire step is an explicit request (client.request with a pass-through result schema,
// so the raw result is what gets asserted; the SDK's own result schemas are applied on top).
// The SDK's automatic helpers (callToolStream, which polls and fetches results on its own)
// are deliberately not used.

import * as z from 'zod/v4';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTaskStore, InMemoryTaskMessageQueue } from '@modelcontextprotocol/sdk/experimental/tasks';
import {
    CallToolResultSchema,
    CancelTaskResultSchema,
    CreateTaskResultSchema,
    ElicitRequestSchema,
    GetTaskResultSchema,
    ListTasksResultSchema,
    ListToolsResultSchema,
    RELATED_TASK_META_KEY,
    TaskStatusNotificationSchema
} from '@modelcontextprotocol/sdk/types.js';

const PROTOCOL_VERSION = '2025-11-25';
const CHECK_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 8_000;
const POLL_CAP_MS = 500; // poll at the server's pollInterval, but never wait longer than this
const POLL_FLOOR_MS = 20;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const STATUSES = new Set(['working', 'input_required', 'completed', 'failed', 'cancelled']);
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

const AnyResult = z.looseObject({});
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

// ---------------------------------------------------------------- command line

function usage(message) {
    if (message) process.stderr.write(`${message}\n`);
    process.stderr.write('usage: ts_tasks_client.mjs [--receiver] --stdio <command> [args...] | --url <http url>\n');
    process.exit(2);
}

function makeTransport(argv) {
    if (argv[0] === '--stdio') {
        if (argv.length < 2) usage('--stdio needs a command');
        return new StdioClientTransport({ command: argv[1], args: argv.slice(2), stderr: 'inherit' });
    }
    if (argv[0] === '--url') {
        if (argv.length !== 2) usage('--url takes exactly one argument');
        return new StreamableHTTPClientTransport(new URL(argv[1]));
    }
    usage();
}

// ---------------------------------------------------------------- wire tap

// Wraps the real transport and records every message in both directions, so the checks can
// see what was on the wire (e.g. the protocol version in the initialize result, and when the
// elicitation request arrived relative to the tasks/result response).
class WireTap {
    constructor(inner) {
        this.inner = inner;
        this.messages = []; // {dir: 'in'|'out', at: ms, message}
        inner.onmessage = (message, extra) => {
            this.messages.push({ dir: 'in', at: Date.now(), message });
            this.onmessage?.(message, extra);
        };
        inner.onerror = error => this.onerror?.(error);
        inner.onclose = () => this.onclose?.();
        if (typeof inner.setProtocolVersion === 'function') {
            this.setProtocolVersion = version => inner.setProtocolVersion(version);
        }
    }
    get sessionId() {
        return this.inner.sessionId;
    }
    start() {
        return this.inner.start();
    }
    send(message, options) {
        this.messages.push({ dir: 'out', at: Date.now(), message });
        return this.inner.send(message, options);
    }
    close() {
        return this.inner.close();
    }
    responseTo(requestMethod, predicate = () => true) {
        const out = this.messages.filter(
            m => m.dir === 'out' && m.message.method === requestMethod && 'id' in m.message && predicate(m.message)
        );
        const ids = new Set(out.map(m => m.message.id));
        return this.messages.find(m => m.dir === 'in' && 'id' in m.message && !('method' in m.message) && ids.has(m.message.id));
    }
}

// ---------------------------------------------------------------- helpers

class CheckFailure extends Error {}

function expect(condition, what, actual) {
    if (!condition) {
        const err = new CheckFailure(what);
        err.actual = actual;
        throw err;
    }
}

function rpc(client, method, params, timeout = REQUEST_TIMEOUT_MS) {
    return client.request({ method, params }, AnyResult, { timeout });
}

// Sends a request that must fail; returns {code, message} of the JSON-RPC error.
async function rpcError(client, method, params, timeout = REQUEST_TIMEOUT_MS) {
    let result;
    try {
        result = await rpc(client, method, params, timeout);
    } catch (error) {
        if (error instanceof CheckFailure) throw error;
        return { code: error?.code, message: wireMessage(error) };
    }
    expect(false, `${method} succeeded where a JSON-RPC error was expected`, result);
}

// The SDK's McpError prefixes "MCP error <code>: " to the message it received; strip that
// one prefix so the detail shows the message as it was on the wire.
function wireMessage(error) {
    const message = error?.message ?? String(error);
    return typeof error?.code === 'number' ? message.replace(`MCP error ${error.code}: `, '') : message;
}

function schemaIssues(schema, value) {
    const parsed = schema.safeParse(value);
    return parsed.success ? null : parsed.error.issues.map(i => `${i.path.join('.')}: ${i.message}`);
}

function relatedTaskId(meta) {
    const related = meta?.[RELATED_TASK_META_KEY];
    return related && typeof related === 'object' ? related.taskId : undefined;
}

function singleText(result) {
    const content = result?.content;
    if (!Array.isArray(content) || content.length !== 1) return undefined;
    return content[0]?.type === 'text' ? content[0].text : undefined;
}

function isIso8601(value) {
    return typeof value === 'string' && ISO_8601.test(value) && !Number.isNaN(Date.parse(value));
}

function taskFieldProblems(task) {
    const problems = [];
    if (typeof task?.taskId !== 'string' || task.taskId === '') problems.push('taskId is not a non-empty string');
    if (!STATUSES.has(task?.status)) problems.push(`status ${JSON.stringify(task?.status)} is not a task status`);
    if (!isIso8601(task?.createdAt)) problems.push(`createdAt ${JSON.stringify(task?.createdAt)} is not ISO 8601`);
    if (!isIso8601(task?.lastUpdatedAt)) problems.push(`lastUpdatedAt ${JSON.stringify(task?.lastUpdatedAt)} is not ISO 8601`);
    if (!(task && 'ttl' in task && (typeof task.ttl === 'number' || task.ttl === null))) {
        problems.push(`ttl ${JSON.stringify(task?.ttl)} is not a number or null`);
    }
    if (task && 'pollInterval' in task && typeof task.pollInterval !== 'number') problems.push('pollInterval is not a number');
    return problems;
}

async function createTask(client, name, args, ttl = 60_000) {
    const result = await rpc(client, 'tools/call', { name, arguments: args, task: { ttl } });
    const taskId = result?.task?.taskId;
    expect(typeof taskId === 'string' && taskId !== '', `tools/call ${name} with task did not return task.taskId`, result);
    return { result, taskId };
}

// Polls tasks/get until `stop(task)` or the deadline; returns the statuses seen and the last task.
async function poll(client, taskId, stop, deadlineMs) {
    const statuses = [];
    const deadline = Date.now() + deadlineMs;
    for (;;) {
        const task = await rpc(client, 'tasks/get', { taskId });
        expect(task.taskId === taskId, 'tasks/get returned another taskId', task);
        if (statuses[statuses.length - 1] !== task.status) statuses.push(task.status);
        if (stop(task)) return { task, statuses, timedOut: false };
        if (Date.now() >= deadline) return { task, statuses, timedOut: true };
        const wait = typeof task.pollInterval === 'number' ? task.pollInterval : 100;
        await sleep(Math.min(Math.max(wait, POLL_FLOOR_MS), POLL_CAP_MS, Math.max(deadline - Date.now(), 0)));
    }
}

function withTimeout(promise, ms, label) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new CheckFailure(`${label} timed out after ${ms} ms`)), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// ---------------------------------------------------------------- receiver mode (--receiver)

// The client-side tasks capability of the receiver mode (spec: "Client Capabilities").
const RECEIVER_TASKS = { list: {}, cancel: {}, requests: { elicitation: { create: {} } } };
const RECEIVER_POLL_INTERVAL_MS = 100; // pollInterval of the tasks this client creates
const RECEIVER_ANSWER_DELAY_MS = 300; // the "user" answers this long after the task was created
const RECEIVER_MAX_TTL_MS = 10 * 60_000;
const TASK_METHODS = new Set(['tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel']);

// Elicitation handler of the receiver mode. A task-augmented elicitation/create gets a task
// in the SDK's task store (extra.taskStore) and a CreateTaskResult at once; the answer is
// stored as the task's result a little later. Everything after that (tasks/get,
// tasks/result, tasks/list, tasks/cancel) is answered by the SDK from the store.
async function receiverElicitation(request, extra) {
    const params = request.params;
    elicitations.push({ at: Date.now(), params, relatedTaskId: relatedTaskId(params?._meta) });
    const answer = { action: 'accept', content: { name: 'Ada' } };
    if (!params?.task) return answer;
    const requested = params.task.ttl;
    const ttl = typeof requested === 'number' ? Math.min(Math.max(requested, 0), RECEIVER_MAX_TTL_MS) : 60_000;
    const store = extra.taskStore;
    const task = await store.createTask({ ttl, pollInterval: RECEIVER_POLL_INTERVAL_MS });
    setTimeout(() => {
        // Refused (and ignored) if the task was cancelled meanwhile.
        store.storeTaskResult(task.taskId, 'completed', answer).catch(() => {});
    }, RECEIVER_ANSWER_DELAY_MS);
    return { task };
}

// Server-to-client requests in `wire` (a slice of tap.messages), each with the answer this
// client sent for it.
function serverRequests(wire) {
    const started = wire[0]?.at ?? Date.now();
    return wire
        .filter(m => m.dir === 'in' && 'method' in m.message && 'id' in m.message)
        .map(m => {
            const answer = wire.find(a => a.dir === 'out' && !('method' in a.message) && a.message.id === m.message.id);
            return { at: m.at - started, request: m.message, answer: answer?.message };
        });
}

function describe({ at, request, answer }) {
    const params = request.params ?? {};
    const entry = { method: request.method, atMs: at };
    if ('taskId' in params) entry.taskId = params.taskId;
    if ('task' in params) entry.paramsTask = params.task;
    if (relatedTaskId(params._meta) !== undefined) entry.relatedTaskMeta = relatedTaskId(params._meta);
    if (answer?.error) entry.answeredError = answer.error;
    else if (request.method === 'tasks/get') entry.answeredStatus = answer?.result?.status;
    else if (request.method === 'tasks/list') entry.answeredTaskIds = answer?.result?.tasks?.map(t => t.taskId);
    else if (answer) entry.answered = answer.result;
    return entry;
}

// The JSON account ask_name_via_task gives of the exchange (structuredContent, else the
// second text block).
function toolAccount(result) {
    if (result?.structuredContent && typeof result.structuredContent === 'object') return result.structuredContent;
    const second = result?.content?.[1];
    if (second?.type !== 'text') return null;
    try {
        return JSON.parse(second.text);
    } catch {
        return null;
    }
}

async function runReceiverChecks() {
    const seen = {}; // passed on from receiver_elicitation_task to receiver_list

    await runCheck('receiver_capabilities', async () => {
        const sent = tap.messages.find(m => m.dir === 'out' && m.message.method === 'initialize');
        const tasks = sent?.message?.params?.capabilities?.tasks;
        expect(
            tasks?.requests?.elicitation?.create && typeof tasks.requests.elicitation.create === 'object',
            'the initialize request did not declare capabilities.tasks.requests.elicitation.create',
            sent?.message?.params?.capabilities ?? null
        );
        return {
            sentCapabilities: sent.message.params.capabilities,
            protocolVersion: tap.responseTo('initialize')?.message?.result?.protocolVersion ?? null,
            serverTasks: client.getServerCapabilities()?.tasks ?? null
        };
    });

    await runCheck('receiver_elicitation_task', async () => {
        const from = tap.messages.length;
        const result = await rpc(client, 'tools/call', { name: 'ask_name_via_task', arguments: {} }, 9_000);
        await sleep(50); // let trailing messages (e.g. a status notification) land in the tap
        const wire = tap.messages.slice(from);
        const requests = serverRequests(wire);
        const sequence = requests.map(r => r.request.method);
        const elicit = requests.find(r => r.request.method === 'elicitation/create');
        expect(elicit, 'the server sent no elicitation/create', { sequence, result });
        const params = elicit.request.params ?? {};
        expect(params.task && typeof params.task === 'object', 'elicitation/create carried no params.task', params);
        const created = elicit.answer?.result;
        expect(created, 'the client did not answer elicitation/create with a result', elicit.answer ?? null);
        const issues = schemaIssues(CreateTaskResultSchema, created);
        expect(!issues, 'the answer to elicitation/create is not a CreateTaskResult', { issues, created });
        const taskId = created.task.taskId;
        seen.taskId = taskId;
        const follow = requests.filter(r => TASK_METHODS.has(r.request.method));
        const forTask = follow.filter(r => r.request.params?.taskId === taskId);
        expect(
            forTask.some(r => r.request.method === 'tasks/get' || r.request.method === 'tasks/result'),
            'the server sent neither tasks/get nor tasks/result for the task',
            { taskId, sequence }
        );
        expect(result?.content?.[0]?.type === 'text' && result.content[0].text === 'Hello, Ada!', 'tool result text is not "Hello, Ada!"', result);
        expect(result.isError !== true, 'tool result has isError true', result);
        const gets = forTask.filter(r => r.request.method === 'tasks/get').map(r => r.at);
        const resultAnswer = forTask.find(r => r.request.method === 'tasks/result')?.answer;
        const statusNotificationsSent = wire
            .filter(m => m.dir === 'out' && m.message.method === 'notifications/tasks/status')
            .map(m => ({ taskId: m.message.params?.taskId, status: m.message.params?.status }));
        seen.account = toolAccount(result);
        return {
            taskId,
            serverToClient: sequence,
            exchange: requests.map(describe),
            elicitationParams: params,
            createTaskResult: created,
            tasksGetIntervalsMs: gets.slice(1).map((at, i) => at - gets[i]),
            tasksResultAnswer: resultAnswer ?? null,
            tasksResultHasRelatedTaskMeta: relatedTaskId(resultAnswer?.result?._meta) === taskId,
            statusNotificationsSent,
            toolResult: result
        };
    });

    await runCheck('receiver_list', async () => {
        const lists = serverRequests(tap.messages).filter(r => r.request.method === 'tasks/list');
        if (lists.length === 0) {
            return {
                informational: 'always ok: the server never sent tasks/list to the client, so there was nothing to check',
                sent: 0,
                toolAccount: seen.account ?? null
            };
        }
        expect(seen.taskId, 'no task id from receiver_elicitation_task to look for', { sent: lists.length });
        const listed = [];
        for (const { answer } of lists) {
            expect(answer && !answer.error, 'the client answered tasks/list with an error or not at all', answer ?? null);
            const issues = schemaIssues(ListTasksResultSchema, answer.result);
            expect(!issues, 'the client\'s tasks/list answer does not match the SDK schema', { issues, answer });
            listed.push(...answer.result.tasks);
        }
        const entry = listed.find(task => task.taskId === seen.taskId);
        expect(entry, 'the client\'s tasks/list answer did not list the task', { taskId: seen.taskId, listed: listed.map(t => t.taskId) });
        return {
            sent: lists.length,
            taskId: seen.taskId,
            entry,
            toolSaysListed: seen.account?.listed ?? null
        };
    });
}

async function finish() {
    const passed = results.filter(Boolean).length;
    const failed = results.length - passed;
    process.stdout.write(`${JSON.stringify({ summary: { passed, failed } })}\n`);
    await Promise.race([client.close().catch(() => {}), sleep(2_000)]);
    process.exit(failed === 0 ? 0 : 1);
}

// ---------------------------------------------------------------- main

const argv = process.argv.slice(2);
const receiverMode = argv[0] === '--receiver';
const inner = makeTransport(receiverMode ? argv.slice(1) : argv);
const tap = new WireTap(inner);

const elicitations = []; // {at, params, relatedTaskId}
const statusNotifications = []; // {at, params}

const client = receiverMode
    ? new Client(
          { name: 'ts-tasks-check-client', version: '1.0.0' },
          {
              capabilities: { elicitation: { form: {} }, tasks: RECEIVER_TASKS },
              taskStore: new InMemoryTaskStore(),
              taskMessageQueue: new InMemoryTaskMessageQueue()
          }
      )
    : new Client({ name: 'ts-tasks-check-client', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
if (receiverMode) {
    client.setRequestHandler(ElicitRequestSchema, receiverElicitation);
} else {
    client.setRequestHandler(ElicitRequestSchema, async request => {
        elicitations.push({ at: Date.now(), params: request.params, relatedTaskId: relatedTaskId(request.params?._meta) });
        return { action: 'accept', content: { name: 'Ada' } };
    });
}
client.setNotificationHandler(TaskStatusNotificationSchema, notification => {
    statusNotifications.push({ at: Date.now(), params: notification.params });
});

const results = [];
function report(check, ok, detail) {
    results.push(ok);
    process.stdout.write(`${JSON.stringify({ check, ok, detail })}\n`);
}

async function runCheck(name, body) {
    try {
        const detail = await withTimeout(Promise.resolve().then(body), CHECK_TIMEOUT_MS, name);
        report(name, true, detail ?? null);
    } catch (error) {
        const detail = { error: error instanceof CheckFailure ? error.message : wireMessage(error) };
        if (error instanceof CheckFailure) {
            if (error.actual !== undefined) detail.actual = error.actual;
        } else if (error?.code !== undefined) {
            detail.code = error.code;
        }
        report(name, false, detail);
    }
}

try {
    await withTimeout(client.connect(tap, { timeout: REQUEST_TIMEOUT_MS }), CHECK_TIMEOUT_MS, 'initialize');
} catch (error) {
    report('connect', false, { error: error?.message ?? String(error) });
    process.stdout.write(`${JSON.stringify({ summary: { passed: 0, failed: 1 } })}\n`);
    await inner.close().catch(() => {});
    process.exit(1);
}

if (receiverMode) {
    await runReceiverChecks();
    await finish();
}

const shared = {}; // the slow_echo task of create_task, reused by get_and_result and list

await runCheck('protocol_version', async () => {
    const response = tap.responseTo('initialize');
    const version = response?.message?.result?.protocolVersion;
    expect(version === PROTOCOL_VERSION, `initialize result protocolVersion is not ${PROTOCOL_VERSION}`, version);
    return { protocolVersion: version };
});

await runCheck('capabilities', async () => {
    const tasks = client.getServerCapabilities()?.tasks;
    expect(tasks && typeof tasks === 'object', 'server capabilities have no tasks', client.getServerCapabilities());
    expect(tasks.requests?.tools?.call && typeof tasks.requests.tools.call === 'object', 'tasks.requests.tools.call missing', tasks);
    expect(tasks.list && typeof tasks.list === 'object', 'tasks.list missing', tasks);
    expect(tasks.cancel && typeof tasks.cancel === 'object', 'tasks.cancel missing', tasks);
    return { tasks };
});

await runCheck('tools_list', async () => {
    const tools = [];
    let cursor;
    for (let page = 0; page < 20; page++) {
        const result = await rpc(client, 'tools/list', cursor ? { cursor } : {});
        const issues = schemaIssues(ListToolsResultSchema, result);
        expect(!issues, 'tools/list result does not match the SDK schema', issues);
        tools.push(...result.tools);
        cursor = result.nextCursor;
        if (!cursor) break;
    }
    const byName = new Map(tools.map(tool => [tool.name, tool]));
    const support = name => byName.get(name)?.execution?.taskSupport;
    const seen = Object.fromEntries(
        ['slow_echo', 'ask_name', 'explode', 'sleepy', 'plain'].map(name => [
            name,
            byName.has(name) ? (byName.get(name).execution ?? null) : 'tool missing'
        ])
    );
    expect(support('slow_echo') === 'optional', 'slow_echo taskSupport is not "optional"', seen);
    expect(support('ask_name') === 'required', 'ask_name taskSupport is not "required"', seen);
    expect(support('explode') === 'required', 'explode taskSupport is not "required"', seen);
    expect(support('sleepy') === 'optional', 'sleepy taskSupport is not "optional"', seen);
    expect(byName.has('plain'), 'plain is missing', seen);
    const plainExecution = byName.get('plain').execution;
    expect(
        plainExecution === undefined || plainExecution.taskSupport === undefined || plainExecution.taskSupport === 'forbidden',
        'plain must have no execution.taskSupport or "forbidden"',
        seen
    );
    return { execution: seen };
});

await runCheck('create_task', async () => {
    const started = Date.now();
    const { result, taskId } = await createTask(client, 'slow_echo', { message: 'hi', delay_ms: 200 });
    shared.taskId = taskId;
    shared.created = result.task;
    const task = result.task;
    const issues = schemaIssues(CreateTaskResultSchema, result);
    expect(!issues, 'CreateTaskResult does not match the SDK schema', { issues, result });
    expect(task.status === 'working', 'task status at creation is not "working"', task);
    const problems = taskFieldProblems(task);
    expect(problems.length === 0, problems.join('; '), task);
    expect(!('content' in result), 'CreateTaskResult carries the tool result (content)', result);
    return { task, _meta: result._meta ?? null, elapsedMs: Date.now() - started };
});

await runCheck('get_and_result', async () => {
    const taskId = shared.taskId ?? (await createTask(client, 'slow_echo', { message: 'hi', delay_ms: 200 })).taskId;
    const first = await rpc(client, 'tasks/get', { taskId });
    expect(first.taskId === taskId, 'tasks/get returned another taskId', first);
    const issues = schemaIssues(GetTaskResultSchema, first);
    expect(!issues, 'tasks/get result does not match the SDK schema', { issues, first });
    const problems = taskFieldProblems(first);
    expect(problems.length === 0, `tasks/get: ${problems.join('; ')}`, first);
    if (shared.created) {
        expect(first.createdAt === shared.created.createdAt, 'tasks/get createdAt differs from the CreateTaskResult', {
            created: shared.created.createdAt,
            got: first.createdAt
        });
    }
    const polled = await poll(client, taskId, task => TERMINAL.has(task.status), 6_000);
    expect(!polled.timedOut, 'task did not reach a terminal status in time', polled);
    expect(polled.task.status === 'completed', 'task ended in a status other than "completed"', polled);
    const unexpected = polled.statuses.filter(s => s !== 'working' && s !== 'completed');
    expect(unexpected.length === 0, 'statuses other than working/completed were seen', polled.statuses);
    const result = await rpc(client, 'tasks/result', { taskId });
    const resultIssues = schemaIssues(CallToolResultSchema, result);
    expect(!resultIssues, 'tasks/result is not a CallToolResult', { resultIssues, result });
    expect(singleText(result) === 'hi', 'tasks/result content is not [{type:"text", text:"hi"}]', result);
    expect(result.isError !== true, 'tasks/result has isError true', result);
    expect(relatedTaskId(result._meta) === taskId, `tasks/result _meta["${RELATED_TASK_META_KEY}"].taskId is not the task id`, result);
    return {
        taskId,
        firstGet: first,
        statuses: polled.statuses,
        relatedTaskMetaOnGet: relatedTaskId(first._meta) !== undefined,
        result
    };
});

await runCheck('list', async () => {
    const taskId = shared.taskId ?? (await createTask(client, 'slow_echo', { message: 'hi', delay_ms: 0 })).taskId;
    const found = [];
    let cursor;
    let pages = 0;
    for (; pages < 50; pages++) {
        const result = await rpc(client, 'tasks/list', cursor ? { cursor } : {});
        const issues = schemaIssues(ListTasksResultSchema, result);
        expect(!issues, 'tasks/list result does not match the SDK schema', { issues, result });
        for (const task of result.tasks) {
            const problems = taskFieldProblems(task);
            expect(problems.length === 0, `tasks/list entry: ${problems.join('; ')}`, task);
            found.push(task);
        }
        cursor = result.nextCursor;
        if (!cursor) break;
    }
    const entry = found.find(task => task.taskId === taskId);
    expect(entry, 'tasks/list does not include the task', { taskId, listed: found.map(t => t.taskId) });
    return { taskId, pages: pages + 1, listed: found.length, entry };
});

await runCheck('no_task_optional', async () => {
    const result = await rpc(client, 'tools/call', { name: 'slow_echo', arguments: { message: 'hi' } });
    expect(!('task' in result), 'a call without task returned a CreateTaskResult', result);
    const issues = schemaIssues(CallToolResultSchema, result);
    expect(!issues, 'result is not a CallToolResult', { issues, result });
    expect(singleText(result) === 'hi', 'result content is not [{type:"text", text:"hi"}]', result);
    expect(result.isError !== true, 'result has isError true', result);
    return { result };
});

await runCheck('elicitation_in_task', async () => {
    const before = elicitations.length;
    const { taskId } = await createTask(client, 'ask_name', {});
    // Poll until input_required (or a terminal status, in case the server pushed the
    // elicitation on its own and it has been answered already); go on after 3 s anyway.
    const polled = await poll(client, taskId, task => task.status === 'input_required' || TERMINAL.has(task.status), 3_000);
    const resultSentAt = Date.now();
    const result = await rpc(client, 'tasks/result', { taskId });
    const resultAt = Date.now();
    const mine = elicitations.slice(before).filter(e => e.relatedTaskId === taskId);
    const others = elicitations.slice(before).filter(e => e.relatedTaskId !== taskId);
    expect(mine.length === 1, 'exactly one elicitation with the related-task _meta of this task was expected', {
        forThisTask: mine.length,
        otherElicitations: others.map(e => e.params),
        statusesBeforeResult: polled.statuses,
        result
    });
    const params = mine[0].params;
    expect(params.message === 'What is your name?', 'elicitation message differs', params);
    expect(params.mode === undefined || params.mode === 'form', 'elicitation is not form mode', params);
    const schema = params.requestedSchema;
    expect(
        schema?.type === 'object' &&
            schema.properties?.name?.type === 'string' &&
            Array.isArray(schema.required) &&
            schema.required.length === 1 &&
            schema.required[0] === 'name',
        'requestedSchema differs from {type:object, properties:{name:{type:string}}, required:[name]}',
        schema
    );
    expect(singleText(result) === 'Hello, Ada!', 'tasks/result content is not [{type:"text", text:"Hello, Ada!"}]', result);
    expect(result.isError !== true, 'tasks/result has isError true', result);
    expect(relatedTaskId(result._meta) === taskId, `tasks/result _meta["${RELATED_TASK_META_KEY}"].taskId is not the task id`, result);
    const after = await rpc(client, 'tasks/get', { taskId });
    expect(after.status === 'completed', 'tasks/get after tasks/result is not "completed"', after);
    const elicitedAt = mine[0].at;
    // What this SDK client answered on the wire (it adds no related-task _meta to responses).
    const request = tap.messages.find(
        m => m.dir === 'in' && m.message.method === 'elicitation/create' && relatedTaskId(m.message.params?._meta) === taskId
    );
    const response = request && tap.messages.find(m => m.dir === 'out' && m.message.id === request.message.id && !('method' in m.message));
    return {
        taskId,
        statusesBeforeResult: polled.statuses,
        sawInputRequired: polled.statuses.includes('input_required'),
        elicitationArrived: true,
        elicitationWhileResultPending: elicitedAt >= resultSentAt && elicitedAt <= resultAt,
        elicitationBeforeResultRequest: elicitedAt < resultSentAt,
        elicitation: params,
        clientResponseOnWire: response?.message ?? null,
        result
    };
});

await runCheck('result_blocks', async () => {
    // tasks/result on a task that is still working MUST block until it is terminal.
    const { taskId, result: created } = await createTask(client, 'slow_echo', { message: 'hi', delay_ms: 600 });
    const sentAt = Date.now();
    const result = await rpc(client, 'tasks/result', { taskId });
    const waitedMs = Date.now() - sentAt;
    expect(singleText(result) === 'hi', 'tasks/result content is not [{type:"text", text:"hi"}]', result);
    expect(relatedTaskId(result._meta) === taskId, `tasks/result _meta["${RELATED_TASK_META_KEY}"].taskId is not the task id`, result);
    const after = await rpc(client, 'tasks/get', { taskId });
    expect(after.status === 'completed', 'tasks/get after tasks/result is not "completed"', after);
    return { taskId, statusAtCreation: created.task.status, waitedMs, result };
});

await runCheck('required_without_task', async () => {
    const error = await rpcError(client, 'tools/call', { name: 'ask_name', arguments: {} });
    expect(error.code === -32601, 'error code is not -32601 (Method not found)', error);
    return error;
});

await runCheck('forbidden_with_task', async () => {
    const error = await rpcError(client, 'tools/call', { name: 'plain', arguments: { message: 'hi' }, task: { ttl: 60_000 } });
    expect(error.code === -32601, 'error code is not -32601 (Method not found)', error);
    return error;
});

await runCheck('cancel', async () => {
    const { taskId } = await createTask(client, 'sleepy', { seconds: 30 });
    const cancelled = await rpc(client, 'tasks/cancel', { taskId });
    const issues = schemaIssues(CancelTaskResultSchema, cancelled);
    expect(!issues, 'tasks/cancel result does not match the SDK schema', { issues, cancelled });
    expect(cancelled.taskId === taskId, 'tasks/cancel returned another taskId', cancelled);
    expect(cancelled.status === 'cancelled', 'tasks/cancel result status is not "cancelled"', cancelled);
    const got = await rpc(client, 'tasks/get', { taskId });
    expect(got.status === 'cancelled', 'tasks/get after cancel is not "cancelled"', got);
    const again = await rpcError(client, 'tasks/cancel', { taskId });
    expect(again.code === -32602, 'second tasks/cancel error code is not -32602 (Invalid params)', again);
    // A terminal task's tasks/result must answer at once (what it answers for a cancelled
    // task the spec leaves open, so only the promptness is asserted).
    let resultOutcome;
    try {
        const result = await rpc(client, 'tasks/result', { taskId }, 3_000);
        resultOutcome = { result };
    } catch (error) {
        resultOutcome = { error: { code: error?.code, message: wireMessage(error) } };
    }
    expect(resultOutcome.error?.code !== -32001, 'tasks/result on a cancelled (terminal) task blocked', resultOutcome);
    return { taskId, cancelResult: cancelled, secondCancel: again, tasksResultOnCancelled: resultOutcome };
});

await runCheck('unknown_task', async () => {
    const taskId = 'no-such-task';
    const errors = {
        'tasks/get': await rpcError(client, 'tasks/get', { taskId }),
        'tasks/result': await rpcError(client, 'tasks/result', { taskId }),
        'tasks/cancel': await rpcError(client, 'tasks/cancel', { taskId })
    };
    const wrong = Object.entries(errors).filter(([, e]) => e.code !== -32602);
    expect(wrong.length === 0, `not -32602 (Invalid params): ${wrong.map(([m]) => m).join(', ')}`, errors);
    return errors;
});

await runCheck('failed_tool', async () => {
    const { taskId } = await createTask(client, 'explode', {});
    const polled = await poll(client, taskId, task => TERMINAL.has(task.status), 6_000);
    expect(!polled.timedOut, 'task did not reach a terminal status in time', polled);
    expect(polled.task.status === 'failed', 'task status is not "failed"', polled);
    const result = await rpc(client, 'tasks/result', { taskId });
    expect(result.isError === true, 'tasks/result isError is not true', result);
    expect(singleText(result) === 'boom', 'tasks/result content is not [{type:"text", text:"boom"}]', result);
    expect(relatedTaskId(result._meta) === taskId, `tasks/result _meta["${RELATED_TASK_META_KEY}"].taskId is not the task id`, result);
    return { taskId, statuses: polled.statuses, statusMessage: polled.task.statusMessage ?? null, result };
});

await runCheck('status_notifications', async () => {
    await sleep(300);
    const byTask = {};
    let withRelatedMeta = 0;
    for (const { params } of statusNotifications) {
        (byTask[params.taskId] ??= []).push(params.status);
        if (relatedTaskId(params._meta) !== undefined) withRelatedMeta++;
    }
    return {
        informational: 'always ok: notifications/tasks/status is optional (MAY)',
        received: statusNotifications.length,
        statusesByTask: byTask,
        withRelatedTaskMeta: withRelatedMeta
    };
});

await finish();
