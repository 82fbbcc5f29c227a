/**
 * The `gitport` command. Each subcommand lives in its own module and is loaded on demand, so
 * `gitport index-pack` does not load the gateway.
 */
export type Command = (args: readonly string[]) => Promise<number>;

const commands: Record<string, () => Promise<Command>> = {
  serve: async () => (await import('./serve.js')).serve,
  'pack-objects': async () => (await import('./pack-objects.js')).packObjects,
  'index-pack': async () => (await import('./index-pack.js')).indexPack,
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
