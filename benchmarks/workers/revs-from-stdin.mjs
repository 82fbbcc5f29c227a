/**
 * The revisions a bench worker reads on stdin, one per line: `<oid>` wants it, `^<oid>` has it
 * (as `git rev-list --stdin` takes them).
 */
export async function readRevs() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  const wants = [];
  const haves = [];
  for (const line of Buffer.concat(chunks).toString('utf8').split('\n')) {
    if (line.startsWith('^')) haves.push(line.slice(1));
    else if (line) wants.push(line);
  }
  return { wants, haves };
}
