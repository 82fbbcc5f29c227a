/**
 * The `gitport` command. Each subcommand lives in its own module and is loaded on demand, so
 * `gitport index-pack` does not load the gateway.
 */
import { setFlagsFromString } from 'node:v8';

export type Command = (args: readonly string[]) => Promise<number>;

/**
 * Keeps V8's heap small for a pack import: the young generation at its initial size (V8 grows it
 * as objects survive scavenges, up to tens of megabytes of private memory over a large pack,
 * while what an import keeps lives in typed arrays and its short-lived objects die young at any
 * size), and V8's heuristics set to favour memory over speed (smaller steps of old-generation
 * growth, among others). V8 reads both flags each time it decides.
 */
function keepHeapSmall(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
  setFlagsFromString('--optimize-for-size');
}

const commands: Record<string, () => Promise<Command>> = {
  serve: async () => (await import('./serve.js')).serve,
  'pack-objects': async () => (await import('./pack-objects.js')).packObjects,
  'index-pack': async () => {
    // before the command's modules load (their compilation is the first young-generation
    // growth): see keepHeapSmall
    keepHeapSmall();
    return (await import('./index-pack.js')).indexPack;
  },
};

const usage = `usage: gitport <command> [options]

commands:
  serve         serve repositories over smart HTTP with SSE ref events
  pack-objects  write a pack of a repository's objects to stdout
  index-pack    store a pack read from stdin with its .idx
`;

export async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage);
    return name === undefined ? 1 : 0;
  }
  const load = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!load) {
    process.stderr.write(`gitport: unknown command '${name}'\n\n${usage}`);
    return 1;
  }
  return (await load())(rest);
}
