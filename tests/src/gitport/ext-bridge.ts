/**
 * A bridge for git's `ext::` transport (git-remote-ext(1)): real git runs
 * `ext::node … ext-bridge.ts %s <root> <name>`; this process hosts `<root>/<name>.git` with
 * gitport on one bus, opens a transport stream to it from a second bus (the two joined by a
 * MessageChannel), and pipes git's stdin and stdout through that stream. So real git's fetch,
 * clone and push talk to gitport's host exactly as a gitport remote in another worker would.
 * A 4th argument `v2` (or `GIT_PROTOCOL=version=2`) makes the host answer in protocol v2.
 */
import { MessageChannel } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { open } from '@gitport/transport';
import { encodeGitRequest, GIT_STREAM, host } from 'gitport';
import { nodeRepositories } from 'gitport/node';

const [service, root, name, forced] = process.argv.slice(2);
if ((service !== 'git-upload-pack' && service !== 'git-receive-pack') || !root || !name) {
  process.stderr.write('usage: ext-bridge.ts git-upload-pack|git-receive-pack <root> <name> [v2]\n');
  process.exit(2);
}

const channel = new MessageChannel();
const hostBus = createBus({ id: 'host' });
const clientBus = createBus({ id: 'git' });
await Promise.all([hostBus.connect(nodeEndpoint(channel.port1)), clientBus.connect(nodeEndpoint(channel.port2))]);
host(hostBus, nodeRepositories(root), {
  onError: (error) => process.stderr.write(`gitport host: ${(error as Error).message}\n`),
});

// git passes GIT_PROTOCOL to file:// and ssh helpers, not to ext:: commands: a 4th argument `v2`
// makes the host answer in protocol v2, which git then speaks (connect.c discover_version).
const v2 =
  service === 'git-upload-pack' && (forced === 'v2' || /(^|:)version=2(:|$)/.test(process.env.GIT_PROTOCOL ?? ''));
const stream = await open(clientBus, 'host', GIT_STREAM);
await stream.write(encodeGitRequest({ service, repository: name, parameters: v2 ? ['version=2'] : [] }));

const toHost = (async () => {
  for await (const chunk of process.stdin) {
    const bytes = chunk as Buffer;
    await stream.write(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  }
  await stream.end();
})();
let failed = false;
try {
  for await (const chunk of stream) {
    if (!process.stdout.write(chunk)) await new Promise((resolve) => process.stdout.once('drain', resolve));
  }
} catch (error) {
  failed = true;
  process.stderr.write(`gitport bridge: ${(error as Error).message}\n`);
}
await toHost.catch(() => {});
process.stdout.end(() => {
  hostBus.close();
  clientBus.close();
  channel.port1.close();
  channel.port2.close();
  process.exit(failed ? 1 : 0);
});
